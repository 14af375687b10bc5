// What a Unity app sends each frame, without Unity: the MonoBehaviours (Runtime/Unity) fill in the
// head / controller readings and hand the datagrams to a UdpClient; the tests drive the same code.
using System;

namespace HriTeleop.Protocol
{
    /// <summary>Pulse commands: one packet every frame at pulse.health.expected_receive_rate_hz
    /// (25 Hz). A press is a pulse: exactly PulseMessages (3) consecutive packets carrying its
    /// (state, angular), then idle, however long or short the button is held (the Tino VR design,
    /// "Pulse-Based Command Architecture"). The robot executes a pulse only when all its messages
    /// arrive and agree (docs/protocols.md "Pulse consistency"), so the sender never cuts or
    /// changes a running pulse: a press while one runs, or before an idle packet followed it, is
    /// refused (Press returns false; the robot would debounce it anyway).</summary>
    public sealed class PulseSender
    {
        public readonly SequenceCounter Sequence = new SequenceCounter();
        public PacketAuth Auth;   // null: plain 32-byte packets (pulse.auth.mode: off)
        public float HeadPitchDeg, HeadPanDeg, HeadTiltDeg, AudioVolume, AudioOrientationDeg;
        public int PulseMessages = 3;   // pulse.check.messages
        public int BaseState { get; private set; }
        public int BaseAngular { get; private set; }
        private int pulseLeft;          // packets of the running pulse still to send
        private bool idleSent = true;   // an idle packet went out since the last pulse

        /// <summary>True while a pulse is being sent.</summary>
        public bool Pulsing { get { return pulseLeft > 0; } }

        /// <summary>Start a pulse of (state 1..3, angular -1/0/+1); state 0 is idle (nothing to
        /// send). False when refused (a pulse is running or has just ended).</summary>
        public bool Press(int state, int angular)
        {
            if (state == 0 || pulseLeft > 0 || !idleSent) return false;
            BaseState = state; BaseAngular = angular;
            pulseLeft = Math.Max(1, PulseMessages);
            idleSent = false;
            return true;
        }

        /// <summary>The button went up: nothing to do (a running pulse completes).</summary>
        public void Release() { }

        public PulsePacket NextPacket()
        {
            PulsePacket p = new PulsePacket();
            p.HeadPitchDeg = Clamp(HeadPitchDeg, PulsePacket.HeadAbsMaxDeg);
            p.HeadPanDeg = Clamp(HeadPanDeg, PulsePacket.HeadAbsMaxDeg);
            p.HeadTiltDeg = Clamp(HeadTiltDeg, PulsePacket.HeadAbsMaxDeg);
            if (pulseLeft > 0)
            {
                p.BaseState = BaseState;
                p.BaseAngular = BaseAngular;
                pulseLeft--;
            }
            else
            {
                idleSent = true;
            }
            p.AudioVolume = Math.Max(0f, Math.Min(PulsePacket.AudioVolumeMax, AudioVolume));
            p.AudioOrientationDeg = Clamp(AudioOrientationDeg, PulsePacket.AudioOrientationAbsMaxDeg);
            p.MessageOrder = Sequence.Next();
            return p;
        }

        /// <summary>The datagram of this frame (sealed when Auth is set; after the counter's last
        /// number the next packet, 0, opens a new session).</summary>
        public byte[] NextDatagram()
        {
            PulsePacket p = NextPacket();
            byte[] b = p.Encode();
            if (Auth == null) return b;
            byte[] sealedPacket = Auth.Seal(b);
            if (p.MessageOrder == SequenceCounter.Modulus) Auth.Session = PacketAuth.NewSession();   // a session never wraps
            return sealedPacket;
        }

        /// <summary>Unity's Euler angles run 0..360; the wire wants -180..180.</summary>
        public static float WrapDeg(float deg)
        {
            float d = deg % 360f;
            if (d > 180f) d -= 360f;
            if (d < -180f) d += 360f;
            return d;
        }

        private static float Clamp(float v, float lim)
        {
            if (float.IsNaN(v) || float.IsInfinity(v)) return 0f;
            return Math.Max(-lim, Math.Min(lim, v));
        }
    }

    /// <summary>Controller poses at teleop.vr.expected_rate_hz (50 Hz). Clutch held = the arm
    /// follows the hand's motion since the press; released = it holds (re-center the hand, press
    /// again: the next stroke).</summary>
    public sealed class ArmPoseSender
    {
        public readonly SequenceCounter Sequence = new SequenceCounter();
        public PacketAuth Auth;   // null: plain 56-byte packets (pulse.auth.mode: off)
        public bool RightHand = true;

        public byte[] NextDatagram(double stampS, float[] positionM, float[] quatXyzw, bool clutch,
                                   bool trackingValid, ArmButtons buttons, float trigger, float grip)
        {
            ArmPosePacket p = new ArmPosePacket();
            p.Sequence = Sequence.Next();
            p.StampS = stampS;
            p.PX = positionM[0]; p.PY = positionM[1]; p.PZ = positionM[2];
            double n = Math.Sqrt(quatXyzw[0] * quatXyzw[0] + quatXyzw[1] * quatXyzw[1] +
                                 quatXyzw[2] * quatXyzw[2] + quatXyzw[3] * quatXyzw[3]);
            if (!(n > 0.5)) { quatXyzw = new float[] { 0f, 0f, 0f, 1f }; n = 1.0; trackingValid = false; }
            p.QX = (float)(quatXyzw[0] / n); p.QY = (float)(quatXyzw[1] / n);
            p.QZ = (float)(quatXyzw[2] / n); p.QW = (float)(quatXyzw[3] / n);
            p.Clutch = clutch && trackingValid;
            p.TrackingValid = trackingValid;
            p.RightHand = RightHand;
            p.Buttons = buttons;
            p.Trigger = Math.Max(0f, Math.Min(1f, trigger));
            p.Grip = Math.Max(0f, Math.Min(1f, grip));
            byte[] b = p.Encode();
            if (Auth == null) return b;
            byte[] sealedPacket = Auth.Seal(b);
            if (p.Sequence == SequenceCounter.Modulus) Auth.Session = PacketAuth.NewSession();   // a session never wraps
            return sealedPacket;
        }
    }
}
