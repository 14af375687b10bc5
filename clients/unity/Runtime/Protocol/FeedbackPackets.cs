// Feedback packets (robot -> Unity), version 1, docs/protocols.md "Feedback packets":
// pose 48 bytes '<4sBBHId3f4f' (magic TNPO), skeleton 20 + 12 n bytes '<4sBBHId' + n '<3f' (TNSK).
using System;

namespace HriTeleop.Protocol
{
    public sealed class PoseFeedback
    {
        public const int Size = 48;
        public uint Sequence;
        public double StampS;        // robot clock, s
        public bool Valid;           // flags bit0: the robot has an /odom pose
        public float X, Y, Z;        // m, ROS odom frame (x forward, y left, z up)
        public float QX, QY, QZ, QW; // ROS order
    }

    public sealed class SkeletonFeedback
    {
        public const int HeaderSize = 20;
        public uint Sequence;
        public double StampS;
        public float[][] Joints;     // n x (x, y, z), m
    }

    /// <summary>Decodes what the robot sends back. Unknown magics, versions and sizes are
    /// rejected and counted by cause (never thrown): a newer robot never confuses an older app.</summary>
    public sealed class FeedbackDecoder
    {
        public const byte Version = 1;
        public int Rejected;
        public string LastRejectCause;
        public readonly System.Collections.Generic.Dictionary<string, int> RejectedByCause =
            new System.Collections.Generic.Dictionary<string, int>();

        private object Reject(string cause)
        {
            Rejected++;
            LastRejectCause = cause;
            int n;
            RejectedByCause.TryGetValue(cause, out n);
            RejectedByCause[cause] = n + 1;
            return null;
        }

        private static bool MagicIs(byte[] b, string m)
        {
            return b[0] == m[0] && b[1] == m[1] && b[2] == m[2] && b[3] == m[3];
        }

        /// <summary>A PoseFeedback, a SkeletonFeedback, or null (rejected, counted).</summary>
        public object Decode(byte[] b)
        {
            if (b == null || b.Length < 4) return Reject("bad_size");
            if (MagicIs(b, "TNPO"))
            {
                if (b.Length != PoseFeedback.Size) return Reject("bad_size");
                if (b[4] != Version) return Reject("bad_version");
                PoseFeedback p = new PoseFeedback();
                p.Valid = (b[5] & 1) != 0;
                p.Sequence = LittleEndian.ReadUInt32(b, 8);
                p.StampS = LittleEndian.ReadDouble(b, 12);
                p.X = LittleEndian.ReadSingle(b, 20); p.Y = LittleEndian.ReadSingle(b, 24); p.Z = LittleEndian.ReadSingle(b, 28);
                p.QX = LittleEndian.ReadSingle(b, 32); p.QY = LittleEndian.ReadSingle(b, 36);
                p.QZ = LittleEndian.ReadSingle(b, 40); p.QW = LittleEndian.ReadSingle(b, 44);
                return p;
            }
            if (MagicIs(b, "TNSK"))
            {
                if (b.Length < SkeletonFeedback.HeaderSize) return Reject("bad_size");
                if (b[4] != Version) return Reject("bad_version");
                int n = b[5];
                if (b.Length != SkeletonFeedback.HeaderSize + 12 * n) return Reject("bad_size");
                SkeletonFeedback s = new SkeletonFeedback();
                s.Sequence = LittleEndian.ReadUInt32(b, 8);
                s.StampS = LittleEndian.ReadDouble(b, 12);
                s.Joints = new float[n][];
                for (int i = 0; i < n; i++)
                {
                    int o = SkeletonFeedback.HeaderSize + 12 * i;
                    s.Joints[i] = new float[] { LittleEndian.ReadSingle(b, o), LittleEndian.ReadSingle(b, o + 4),
                                                LittleEndian.ReadSingle(b, o + 8) };
                }
                return s;
            }
            return Reject("bad_magic");
        }
    }
}
