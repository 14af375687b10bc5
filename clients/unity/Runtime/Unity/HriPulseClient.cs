// Thin Unity wrapper (compiled by Unity only): sends the headset's pulse command packet over UDP at
// the robot's expected rate and receives the robot's feedback. The protocol is HriTeleop.Protocol.
// Defaults mirror config/_defaults.yaml (pulse.udp.port, pulse.health.expected_receive_rate_hz,
// pulse.health.disconnect_timeout_s); set them to the robot's config values in the inspector.
using System;
using System.Net;
using System.Net.Sockets;
using HriTeleop.Protocol;
using UnityEngine;

namespace HriTeleop.Unity
{
    public class HriPulseClient : MonoBehaviour
    {
        [Tooltip("Robot address (pulse.udp.bind_address of the robot, reachable from the headset)")]
        public string robotHost = "127.0.0.1";
        [Tooltip("pulse.udp.port")] public int robotPort = 5005;
        [Tooltip("pulse.health.expected_receive_rate_hz")] public float sendRateHz = 25f;
        [Tooltip("pulse.health.disconnect_timeout_s")] public float linkTimeoutS = 3f;
        [Tooltip("hex key of pulse.auth.key_file; empty = unauthenticated packets (the robot must bind loopback)")] public string authKeyHex = "";
        [Tooltip("pulse.auth.key_id")] public int authKeyId = 1;
        [Tooltip("the headset (main camera) transform: head angles")] public Transform head;

        public readonly PulseSender Sender = new PulseSender();
        public LinkState Link { get; private set; }
        private UdpClient udp;
        private double nextSendS;

        void OnEnable()
        {
            Link = new LinkState(linkTimeoutS);
            // a new session each time the client starts (the robot drops the old one's packets)
            Sender.Auth = string.IsNullOrEmpty(authKeyHex) ? null : PacketAuth.FromHex(authKeyHex, (byte)authKeyId);
            udp = new UdpClient(0);
            udp.Connect(robotHost, robotPort);   // feedback comes back to this socket's port
            nextSendS = Time.realtimeSinceStartupAsDouble;
        }

        void OnDisable()
        {
            if (udp != null) udp.Close();
            udp = null;
        }

        /// <summary>A pulse button went down: state 1..3, angular -1/0/+1. Sends one whole pulse
        /// (PulseSender.PulseMessages packets), one command per press; false while a pulse runs.</summary>
        public bool Press(int state, int angular) { return Sender.Press(state, angular); }
        public void Release() { Sender.Release(); }

        void Update()
        {
            double now = Time.realtimeSinceStartupAsDouble;
            if (head != null)
            {
                Vector3 e = head.localEulerAngles;
                Sender.HeadPitchDeg = PulseSender.WrapDeg(e.x);
                Sender.HeadPanDeg = PulseSender.WrapDeg(e.y);
                Sender.HeadTiltDeg = PulseSender.WrapDeg(e.z);
            }
            double period = 1.0 / sendRateHz;
            if (now >= nextSendS)
            {
                byte[] d = Sender.NextDatagram();
                udp.Send(d, d.Length);
                nextSendS = Math.Max(nextSendS + period, now - period);
            }
            while (udp.Available > 0)
            {
                IPEndPoint from = null;
                Link.OnDatagram(udp.Receive(ref from), now);
            }
            Link.Update(now);
        }
    }
}
