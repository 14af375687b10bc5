// VR controller pose packet (Unity -> robot), version 1, docs/protocols.md "Arm teleop":
// 56 bytes, struct '<4sBBHid3f4fff', Unity tracking frame (left-handed, x right, y up, z forward).
using System;

namespace HriTeleop.Protocol
{
    [Flags]
    public enum ArmButtons : ushort
    {
        None = 0, Primary = 1 << 0, Secondary = 1 << 1, StickClick = 1 << 2, Menu = 1 << 3,
        TriggerPressed = 1 << 4, GripPressed = 1 << 5,
    }

    public struct ArmPosePacket
    {
        public const int Size = 56;
        public const byte Version = 1;
        public static readonly byte[] Magic = { (byte)'H', (byte)'R', (byte)'A', (byte)'C' };
        public const byte FlagClutch = 0x01, FlagTrackingValid = 0x02, FlagRightHand = 0x04;
        public const float MaxPositionM = 10f;
        public const float QuatNormTolerance = 1e-2f;

        public bool Clutch;           // the "mouse-pad" button: held = the arm follows the hand
        public bool TrackingValid;    // false: the robot treats the packet as clutch released
        public bool RightHand;
        public ArmButtons Buttons;
        public int Sequence;          // SequenceCounter
        public double StampS;         // Time.realtimeSinceStartupAsDouble
        public float PX, PY, PZ;      // m, Unity tracking frame
        public float QX, QY, QZ, QW;  // unit quaternion, Unity tracking frame
        public float Trigger, Grip;   // 0..1

        /// <summary>null when the robot would accept it, else the rejection cause.</summary>
        public string Check()
        {
            if (Sequence < 0) return "bad_sequence";
            double[] v = { StampS, PX, PY, PZ, QX, QY, QZ, QW, Trigger, Grip };
            foreach (double d in v)
                if (double.IsNaN(d) || double.IsInfinity(d)) return "non_finite";
            if (Math.Sqrt(PX * PX + PY * PY + PZ * PZ) > MaxPositionM) return "position_out_of_range";
            double n = Math.Sqrt(QX * QX + QY * QY + QZ * QZ + QW * QW);
            if (Math.Abs(n - 1.0) > QuatNormTolerance) return "bad_quaternion";
            if (Trigger < 0f || Trigger > 1f || Grip < 0f || Grip > 1f) return "analog_out_of_range";
            return null;
        }

        public byte[] Encode()
        {
            string cause = Check();
            if (cause != null) throw new ArgumentException("arm pose packet rejected before sending: " + cause);
            byte[] b = new byte[Size];
            Buffer.BlockCopy(Magic, 0, b, 0, 4);
            b[4] = Version;
            b[5] = (byte)((Clutch ? FlagClutch : 0) | (TrackingValid ? FlagTrackingValid : 0) |
                          (RightHand ? FlagRightHand : 0));
            LittleEndian.WriteUInt16(b, 6, (ushort)Buttons);
            LittleEndian.WriteInt32(b, 8, Sequence);
            LittleEndian.WriteDouble(b, 12, StampS);
            float[] f = { PX, PY, PZ, QX, QY, QZ, QW, Trigger, Grip };
            for (int i = 0; i < f.Length; i++) LittleEndian.WriteSingle(b, 20 + 4 * i, f[i]);
            return b;
        }

        public static ArmPosePacket Decode(byte[] b)
        {
            if (b == null || b.Length != Size) throw new ArgumentException("bad_size");
            for (int i = 0; i < 4; i++) if (b[i] != Magic[i]) throw new ArgumentException("bad_magic");
            if (b[4] != Version) throw new ArgumentException("bad_version");
            ArmPosePacket p = new ArmPosePacket();
            p.Clutch = (b[5] & FlagClutch) != 0;
            p.TrackingValid = (b[5] & FlagTrackingValid) != 0;
            p.RightHand = (b[5] & FlagRightHand) != 0;
            p.Buttons = (ArmButtons)LittleEndian.ReadUInt16(b, 6);
            p.Sequence = LittleEndian.ReadInt32(b, 8);
            p.StampS = LittleEndian.ReadDouble(b, 12);
            p.PX = LittleEndian.ReadSingle(b, 20); p.PY = LittleEndian.ReadSingle(b, 24); p.PZ = LittleEndian.ReadSingle(b, 28);
            p.QX = LittleEndian.ReadSingle(b, 32); p.QY = LittleEndian.ReadSingle(b, 36);
            p.QZ = LittleEndian.ReadSingle(b, 40); p.QW = LittleEndian.ReadSingle(b, 44);
            p.Trigger = LittleEndian.ReadSingle(b, 48); p.Grip = LittleEndian.ReadSingle(b, 52);
            return p;
        }
    }
}
