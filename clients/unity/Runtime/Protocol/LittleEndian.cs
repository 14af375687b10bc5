// Little-endian reads and writes of the wire types, independent of the host's byte order.
// Pure C# (no UnityEngine): compiled by Unity and by Mono's mcs in the repository's tests.
using System;

namespace HriTeleop.Protocol
{
    public static class LittleEndian
    {
        public static void WriteInt32(byte[] b, int offset, int v)
        {
            b[offset] = (byte)v; b[offset + 1] = (byte)(v >> 8);
            b[offset + 2] = (byte)(v >> 16); b[offset + 3] = (byte)(v >> 24);
        }

        public static int ReadInt32(byte[] b, int offset)
        {
            return b[offset] | (b[offset + 1] << 8) | (b[offset + 2] << 16) | (b[offset + 3] << 24);
        }

        public static void WriteUInt32(byte[] b, int offset, uint v) { WriteInt32(b, offset, unchecked((int)v)); }

        public static uint ReadUInt32(byte[] b, int offset) { return unchecked((uint)ReadInt32(b, offset)); }

        public static void WriteUInt16(byte[] b, int offset, ushort v)
        {
            b[offset] = (byte)v; b[offset + 1] = (byte)(v >> 8);
        }

        public static ushort ReadUInt16(byte[] b, int offset) { return (ushort)(b[offset] | (b[offset + 1] << 8)); }

        public static void WriteUInt64(byte[] b, int offset, ulong v)
        {
            for (int i = 0; i < 8; i++) b[offset + i] = (byte)(v >> (8 * i));
        }

        public static void WriteSingle(byte[] b, int offset, float v)
        {
            byte[] raw = BitConverter.GetBytes(v);
            if (!BitConverter.IsLittleEndian) Array.Reverse(raw);
            Buffer.BlockCopy(raw, 0, b, offset, 4);
        }

        public static float ReadSingle(byte[] b, int offset)
        {
            byte[] raw = new byte[4];
            Buffer.BlockCopy(b, offset, raw, 0, 4);
            if (!BitConverter.IsLittleEndian) Array.Reverse(raw);
            return BitConverter.ToSingle(raw, 0);
        }

        public static void WriteDouble(byte[] b, int offset, double v)
        {
            byte[] raw = BitConverter.GetBytes(v);
            if (!BitConverter.IsLittleEndian) Array.Reverse(raw);
            Buffer.BlockCopy(raw, 0, b, offset, 8);
        }

        public static double ReadDouble(byte[] b, int offset)
        {
            byte[] raw = new byte[8];
            Buffer.BlockCopy(b, offset, raw, 0, 8);
            if (!BitConverter.IsLittleEndian) Array.Reverse(raw);
            return BitConverter.ToDouble(raw, 0);
        }
    }

    /// <summary>Sequence numbers of the command and arm packets: 0 .. 2^31-1, +1 per packet,
    /// wrapping to 0 (docs/protocols.md; the robot drops duplicates and older packets).</summary>
    public sealed class SequenceCounter
    {
        public const int Modulus = int.MaxValue;   // 2^31 - 1 is the last value; next is 0
        private int next;

        public SequenceCounter(int start = 0)
        {
            if (start < 0) throw new ArgumentOutOfRangeException("start", "sequence numbers are >= 0");
            next = start;
        }

        /// <summary>The number the next packet will carry.</summary>
        public int Peek { get { return next; } }

        /// <summary>The number of this packet; advances the counter (wraps 2^31-1 -> 0).</summary>
        public int Next()
        {
            int v = next;
            next = v == int.MaxValue ? 0 : v + 1;
            return v;
        }

        /// <summary>A restarted app starts again at 0 (the robot re-bases after
        /// pulse.sequence.restart_confirm_packets consecutive packets; with authentication at
        /// once, a restarted app being a new PacketAuth session).</summary>
        public void Reset() { next = 0; }
    }
}
