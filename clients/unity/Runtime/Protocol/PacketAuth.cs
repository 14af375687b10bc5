// Authentication of the headset packets (docs/protocols.md "Authentication"): ONE framing for the
// pulse command packet and the arm controller-pose packet (the robot: hri_pulse/core/auth.py).
// Datagram = packet + 28-byte trailer '<BBHQ16s': auth version 2, key id, reserved 0, session (u64,
// Unix time in ms when this sender started), tag = HMAC-SHA256(key, packet + trailer bytes 0..11)[:16].
using System;
using System.Security.Cryptography;

namespace HriTeleop.Protocol
{
    /// <summary>Seals packets for a robot with pulse.auth.mode: required. One instance per sender
    /// and session (not thread safe). The robot drops a packet whose (session, sequence) is not
    /// above the newest it accepted for this key id ("replayed"): keep the packet's sequence
    /// counting up within a session, and start a new session (NewSession) when the app starts
    /// again or the counter wraps.</summary>
    public sealed class PacketAuth
    {
        public const byte Version = 2;
        public const int HeadSize = 12;           // version, key id, reserved, session
        public const int TrailerSize = 28;
        public const int TagBytes = 16;
        public const int MinKeyBytes = 16;
        private static readonly object SessionLock = new object();
        private static ulong lastSession;
        private readonly HMACSHA256 hmac;
        public readonly byte KeyId;
        public ulong Session;

        public PacketAuth(byte[] key, byte keyId, ulong session)
        {
            if (key == null || key.Length < MinKeyBytes)
                throw new ArgumentException("packet auth key: at least " + MinKeyBytes + " bytes");
            hmac = new HMACSHA256((byte[])key.Clone());
            KeyId = keyId;
            Session = session;
        }

        /// <summary>A key in a new session (NewSession()).</summary>
        public PacketAuth(byte[] key, byte keyId) : this(key, keyId, NewSession()) { }

        /// <summary>The session number of a sender starting now: Unix time in ms, strictly above
        /// any number this process handed out before.</summary>
        public static ulong NewSession()
        {
            lock (SessionLock)
            {
                ulong now = (ulong)DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
                lastSession = Math.Max(now, lastSession + 1);
                return lastSession;
            }
        }

        /// <summary>A key as written in pulse.auth.key_file: hex digits, whitespace ignored.</summary>
        public static byte[] KeyFromHex(string hex)
        {
            string h = string.Concat(hex.Split((char[])null, StringSplitOptions.RemoveEmptyEntries));
            if (h.Length % 2 != 0) throw new ArgumentException("hex key with an odd number of digits");
            byte[] k = new byte[h.Length / 2];
            for (int i = 0; i < k.Length; i++) k[i] = Convert.ToByte(h.Substring(2 * i, 2), 16);
            return k;
        }

        public static PacketAuth FromHex(string hex, byte keyId) { return new PacketAuth(KeyFromHex(hex), keyId); }

        public static PacketAuth FromHex(string hex, byte keyId, ulong session)
        {
            return new PacketAuth(KeyFromHex(hex), keyId, session);
        }

        public byte[] Seal(byte[] packet)
        {
            int n = packet.Length;
            byte[] outp = new byte[n + TrailerSize];
            Buffer.BlockCopy(packet, 0, outp, 0, n);
            outp[n] = Version;
            outp[n + 1] = KeyId;
            LittleEndian.WriteUInt16(outp, n + 2, 0);
            LittleEndian.WriteUInt64(outp, n + 4, Session);
            byte[] tag = hmac.ComputeHash(outp, 0, n + HeadSize);
            Buffer.BlockCopy(tag, 0, outp, n + HeadSize, TagBytes);
            return outp;
        }
    }
}
