// Thin Unity wrapper (compiled by Unity only): streams one controller's pose for the clutch arm
// teleop (docs/protocols.md "Arm teleop"). Grip held = clutch. Defaults mirror config/_defaults.yaml
// (teleop.vr.port, teleop.vr.expected_rate_hz).
using System;
using System.Net.Sockets;
using HriTeleop.Protocol;
using UnityEngine;
using UnityEngine.XR;

namespace HriTeleop.Unity
{
    public class HriArmClient : MonoBehaviour
    {
        public string robotHost = "127.0.0.1";
        [Tooltip("teleop.vr.port")] public int robotPort = 5570;
        [Tooltip("teleop.vr.expected_rate_hz")] public float sendRateHz = 50f;
        public XRNode hand = XRNode.RightHand;
        [Tooltip("the controller transform in the tracking space")] public Transform controller;
        [Tooltip("hex key of pulse.auth.key_file; empty = unauthenticated packets (the robot must bind loopback)")]
        public string authKeyHex = "";
        [Tooltip("pulse.auth.key_id")] public int authKeyId = 1;

        public readonly ArmPoseSender Sender = new ArmPoseSender();
        private UdpClient udp;
        private double nextSendS;

        void OnEnable()
        {
            Sender.RightHand = hand == XRNode.RightHand;
            // a new session each time the client starts (the robot drops the old one's packets)
            Sender.Auth = string.IsNullOrEmpty(authKeyHex) ? null : PacketAuth.FromHex(authKeyHex, (byte)authKeyId);
            udp = new UdpClient(0);
            udp.Connect(robotHost, robotPort);
            nextSendS = Time.realtimeSinceStartupAsDouble;
        }

        void OnDisable()
        {
            if (udp != null) udp.Close();
            udp = null;
        }

        void Update()
        {
            double now = Time.realtimeSinceStartupAsDouble;
            if (now < nextSendS || controller == null) return;
            nextSendS = Math.Max(nextSendS + 1.0 / sendRateHz, now - 1.0 / sendRateHz);
            InputDevice dev = InputDevices.GetDeviceAtXRNode(hand);
            bool grip, trig, primary, secondary, tracked;
            float trigger, gripValue;
            dev.TryGetFeatureValue(CommonUsages.gripButton, out grip);
            dev.TryGetFeatureValue(CommonUsages.triggerButton, out trig);
            dev.TryGetFeatureValue(CommonUsages.primaryButton, out primary);
            dev.TryGetFeatureValue(CommonUsages.secondaryButton, out secondary);
            dev.TryGetFeatureValue(CommonUsages.trigger, out trigger);
            dev.TryGetFeatureValue(CommonUsages.grip, out gripValue);
            tracked = dev.isValid;
            ArmButtons buttons = (primary ? ArmButtons.Primary : 0) | (secondary ? ArmButtons.Secondary : 0) |
                                 (trig ? ArmButtons.TriggerPressed : 0) | (grip ? ArmButtons.GripPressed : 0);
            Vector3 p = controller.localPosition;
            Quaternion q = controller.localRotation;
            byte[] d = Sender.NextDatagram(now, new[] { p.x, p.y, p.z }, new[] { q.x, q.y, q.z, q.w },
                                           grip, tracked, buttons, trigger, gripValue);
            udp.Send(d, d.Length);
        }
    }
}
