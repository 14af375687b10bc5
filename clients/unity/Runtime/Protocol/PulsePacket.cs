// Pulse command packet (Unity -> robot), docs/protocols.md "Pulse": 32 bytes, struct '<fffiiffi',
// optionally followed by the authentication trailer (PacketAuth, docs/protocols.md "Authentication").
using System;

namespace HriTeleop.Protocol
{
    public struct PulsePacket
    {
        public const int Size = 32;
        public const int StateMax = 3;            // pulse.packet.base_state_max
        public const int AngularMax = 1;          // pulse.packet.base_angular_max
        public const float HeadAbsMaxDeg = 180f;  // pulse.packet.head_abs_max_deg
        public const float AudioVolumeMax = 100f; // pulse.packet.audio_volume_max
        public const float AudioOrientationAbsMaxDeg = 360f;

        public float HeadPitchDeg, HeadPanDeg, HeadTiltDeg;
        public int BaseState;         // 0 idle, 1..3 atomic states (edge-triggered on the robot)
        public int BaseAngular;       // -1 left, 0 forward, +1 right
        public float AudioVolume;     // 0..100, a float on the wire
        public float AudioOrientationDeg;
        public int MessageOrder;      // 0 .. 2^31-1 (SequenceCounter)

        /// <summary>The fields' validity as the robot checks it: null when valid, else the
        /// rejection cause the robot would count (non_finite, head_out_of_range, bad_state,
        /// bad_angular, audio_out_of_range, bad_sequence).</summary>
        public string Check()
        {
            float[] floats = { HeadPitchDeg, HeadPanDeg, HeadTiltDeg, AudioVolume, AudioOrientationDeg };
            foreach (float f in floats)
                if (float.IsNaN(f) || float.IsInfinity(f)) return "non_finite";
            if (Math.Abs(HeadPitchDeg) > HeadAbsMaxDeg || Math.Abs(HeadPanDeg) > HeadAbsMaxDeg ||
                Math.Abs(HeadTiltDeg) > HeadAbsMaxDeg) return "head_out_of_range";
            if (BaseState < 0 || BaseState > StateMax) return "bad_state";
            if (BaseAngular < -AngularMax || BaseAngular > AngularMax) return "bad_angular";
            if (AudioVolume < 0f || AudioVolume > AudioVolumeMax ||
                Math.Abs(AudioOrientationDeg) > AudioOrientationAbsMaxDeg) return "audio_out_of_range";
            if (MessageOrder < 0) return "bad_sequence";
            return null;
        }

        /// <summary>The 32 bytes; throws ArgumentException for a packet the robot would reject
        /// (the app never sends what cannot be executed).</summary>
        public byte[] Encode()
        {
            string cause = Check();
            if (cause != null) throw new ArgumentException("pulse packet rejected before sending: " + cause);
            byte[] b = new byte[Size];
            LittleEndian.WriteSingle(b, 0, HeadPitchDeg);
            LittleEndian.WriteSingle(b, 4, HeadPanDeg);
            LittleEndian.WriteSingle(b, 8, HeadTiltDeg);
            LittleEndian.WriteInt32(b, 12, BaseState);
            LittleEndian.WriteInt32(b, 16, BaseAngular);
            LittleEndian.WriteSingle(b, 20, AudioVolume);
            LittleEndian.WriteSingle(b, 24, AudioOrientationDeg);
            LittleEndian.WriteInt32(b, 28, MessageOrder);
            return b;
        }

        public static PulsePacket Decode(byte[] b)
        {
            if (b == null || b.Length != Size) throw new ArgumentException("bad_size");
            PulsePacket p = new PulsePacket();
            p.HeadPitchDeg = LittleEndian.ReadSingle(b, 0);
            p.HeadPanDeg = LittleEndian.ReadSingle(b, 4);
            p.HeadTiltDeg = LittleEndian.ReadSingle(b, 8);
            p.BaseState = LittleEndian.ReadInt32(b, 12);
            p.BaseAngular = LittleEndian.ReadInt32(b, 16);
            p.AudioVolume = LittleEndian.ReadSingle(b, 20);
            p.AudioOrientationDeg = LittleEndian.ReadSingle(b, 24);
            p.MessageOrder = LittleEndian.ReadInt32(b, 28);
            return p;
        }
    }
}
