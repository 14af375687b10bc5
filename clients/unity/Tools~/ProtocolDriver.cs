// Console driver of the protocol core for the repository's tests (tests/unity/): compiled with
// Mono's mcs together with Runtime/Protocol/*.cs, never by Unity (folders ending in '~' are
// ignored by Unity). One command per stdin line, one answer line per command (lockstep with the
// test's simulated clock):
//   golden                          -> encodings of the documented golden vectors (hex)
//   pulse-target <host> <port>      -> UDP socket for pulse packets (feedback arrives on it)
//   arm-target <host> <port>        -> UDP socket for arm pose packets
//   auth <hex key> <key id> [session]     -> seal pulse packets from now on (default: a new session)
//   arm-auth <hex key> <key id> [session] -> seal arm pose packets from now on
//   seal <hex key> <key id> <session> <state> <angular> <seq> <pitch> <pan> <tilt> <volume> <orientation>
//   press <state> <angular> | release  -> press: ok, or refused while a pulse runs
//   tick [n]                        -> send n pulse packets (n frames)
//   arm <stamp> <x> <y> <z> <qx> <qy> <qz> <qw> <clutch 0|1>  -> send one arm pose packet
//   arm-resend                      -> send the last arm datagram again (a replay)
//   arm-restart                     -> the arm sender's numbers start again at 0 (an app restart)
//   feedback <now_s>                -> decode every pending feedback datagram; one JSON-ish line
//   decode <hex>                    -> decode one feedback datagram given in hex
//   link <now_s>                    -> link status
using System;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using HriTeleop.Protocol;

public static class ProtocolDriver
{
    static string Hex(byte[] b)
    {
        StringBuilder sb = new StringBuilder(b.Length * 2);
        foreach (byte x in b) sb.Append(x.ToString("x2"));
        return sb.ToString();
    }

    static byte[] FromHex(string h)
    {
        byte[] b = new byte[h.Length / 2];
        for (int i = 0; i < b.Length; i++) b[i] = Convert.ToByte(h.Substring(2 * i, 2), 16);
        return b;
    }

    static float F(string s) { return float.Parse(s, CultureInfo.InvariantCulture); }
    static double D(string s) { return double.Parse(s, CultureInfo.InvariantCulture); }
    static string R(double v) { return v.ToString("R", CultureInfo.InvariantCulture); }

    static string Describe(object pkt)
    {
        PoseFeedback p = pkt as PoseFeedback;
        if (p != null)
            return "pose " + p.Sequence + " " + R(p.StampS) + " " + (p.Valid ? 1 : 0) + " " + R(p.X) + " " + R(p.Y) + " " +
                   R(p.Z) + " " + R(p.QX) + " " + R(p.QY) + " " + R(p.QZ) + " " + R(p.QW);
        SkeletonFeedback s = pkt as SkeletonFeedback;
        if (s != null)
        {
            StringBuilder sb = new StringBuilder("skeleton " + s.Sequence + " " + R(s.StampS) + " " + s.Joints.Length);
            foreach (float[] j in s.Joints) sb.Append(" " + R(j[0]) + " " + R(j[1]) + " " + R(j[2]));
            return sb.ToString();
        }
        return "rejected";
    }

    public static int Main(string[] args)
    {
        PulseSender pulse = new PulseSender();
        ArmPoseSender arm = new ArmPoseSender();
        LinkState link = new LinkState(args.Length > 0 ? D(args[0]) : 3.0);
        UdpClient pulseUdp = null, armUdp = null;
        byte[] lastArm = null;
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            string[] a = line.Trim().Split(' ');
            string answer;
            try
            {
                switch (a[0])
                {
                    case "golden":
                    {
                        PulsePacket g = new PulsePacket();
                        g.HeadPitchDeg = 10.5f; g.HeadPanDeg = -20.25f; g.HeadTiltDeg = 3f; g.BaseState = 2;
                        g.BaseAngular = -1; g.AudioVolume = 55f; g.AudioOrientationDeg = -90f; g.MessageOrder = 12345;
                        ArmPosePacket h = new ArmPosePacket();
                        h.Sequence = 42; h.StampS = 12.5; h.PX = 0.1f; h.PY = 1.2f; h.PZ = 0.4f; h.QW = 1f;
                        h.Clutch = true; h.TrackingValid = true; h.RightHand = true; h.Buttons = ArmButtons.Primary;
                        h.Trigger = 0.25f; h.Grip = 1f;
                        PacketAuth au = PacketAuth.FromHex("000102030405060708090a0b0c0d0e0f", 7, 1767225600000UL);
                        answer = "golden " + Hex(g.Encode()) + " " + Hex(h.Encode()) + " " + Hex(au.Seal(g.Encode())) +
                                 " " + Hex(au.Seal(h.Encode()));
                        break;
                    }
                    case "seal":     // seal <hex key> <key id> <session> <state> <angular> <seq> <head p> <pan> <tilt> <vol> <ori>
                    {
                        PulsePacket sp = new PulsePacket();
                        sp.BaseState = int.Parse(a[4]); sp.BaseAngular = int.Parse(a[5]); sp.MessageOrder = int.Parse(a[6]);
                        sp.HeadPitchDeg = F(a[7]); sp.HeadPanDeg = F(a[8]); sp.HeadTiltDeg = F(a[9]);
                        sp.AudioVolume = F(a[10]); sp.AudioOrientationDeg = F(a[11]);
                        answer = Hex(PacketAuth.FromHex(a[1], byte.Parse(a[2]), ulong.Parse(a[3])).Seal(sp.Encode()));
                        break;
                    }
                    case "pulse-target":
                        pulseUdp = new UdpClient(new IPEndPoint(IPAddress.Loopback, 0));
                        pulseUdp.Connect(a[1], int.Parse(a[2]));
                        answer = "ok " + ((IPEndPoint)pulseUdp.Client.LocalEndPoint).Port;
                        break;
                    case "arm-target":
                        armUdp = new UdpClient(new IPEndPoint(IPAddress.Loopback, 0));
                        armUdp.Connect(a[1], int.Parse(a[2]));
                        answer = "ok " + ((IPEndPoint)armUdp.Client.LocalEndPoint).Port;
                        break;
                    case "auth":
                    case "arm-auth":
                    {
                        PacketAuth au = a.Length > 3 ? PacketAuth.FromHex(a[1], byte.Parse(a[2]), ulong.Parse(a[3]))
                                                     : PacketAuth.FromHex(a[1], byte.Parse(a[2]));
                        if (a[0] == "auth") pulse.Auth = au; else arm.Auth = au;
                        answer = "ok " + au.Session;
                        break;
                    }
                    case "press":
                        answer = pulse.Press(int.Parse(a[1]), int.Parse(a[2])) ? "ok" : "refused";
                        break;
                    case "release":
                        pulse.Release();
                        answer = "ok";
                        break;
                    case "tick":
                    {
                        int n = a.Length > 1 ? int.Parse(a[1]) : 1;
                        int last = -1;
                        for (int i = 0; i < n; i++)
                        {
                            last = pulse.Sequence.Peek;
                            byte[] d = pulse.NextDatagram();
                            pulseUdp.Send(d, d.Length);
                        }
                        answer = "sent " + last;
                        break;
                    }
                    case "arm":
                    {
                        byte[] d = arm.NextDatagram(D(a[1]), new float[] { F(a[2]), F(a[3]), F(a[4]) },
                                                    new float[] { F(a[5]), F(a[6]), F(a[7]), F(a[8]) },
                                                    a[9] == "1", true, ArmButtons.None, 0f, a[9] == "1" ? 1f : 0f);
                        armUdp.Send(d, d.Length);
                        lastArm = d;
                        answer = "sent " + (arm.Sequence.Peek - 1);
                        break;
                    }
                    case "arm-restart":
                        arm.Sequence.Reset();
                        answer = "ok";
                        break;
                    case "arm-resend":
                        armUdp.Send(lastArm, lastArm.Length);
                        answer = "sent " + lastArm.Length;
                        break;
                    case "feedback":
                    {
                        double now = D(a[1]);
                        StringBuilder sb = new StringBuilder("feedback");
                        while (pulseUdp != null && pulseUdp.Available > 0)
                        {
                            IPEndPoint from = null;
                            object pkt = link.OnDatagram(pulseUdp.Receive(ref from), now);
                            if (pkt != null) sb.Append(" | " + Describe(pkt));
                        }
                        answer = sb.ToString();
                        break;
                    }
                    case "decode":
                        answer = Describe(link.Decoder.Decode(FromHex(a[1]))) +
                                 (link.Decoder.LastRejectCause != null ? " " + link.Decoder.LastRejectCause : "");
                        break;
                    case "link":
                        answer = "link " + link.Update(D(a[1])) + " poses " + link.PosesReceived + " skeletons " +
                                 link.SkeletonsReceived + " rejected " + link.Decoder.Rejected + " lost " + link.Lost;
                        break;
                    case "quit":
                        return 0;
                    default:
                        answer = "error unknown command " + a[0];
                        break;
                }
            }
            catch (Exception e)
            {
                answer = "error " + e.GetType().Name + ": " + e.Message.Replace('\n', ' ');
            }
            Console.Out.WriteLine(answer);
            Console.Out.Flush();
        }
        return 0;
    }
}
