// The app's view of the link (the robot's own view is /diagnostics, docs/interfaces.md): the robot
// sends feedback only while it considers the headset connected, so feedback silence for longer
// than the timeout means "the robot does not hear us" (or is gone). Injected clock: every method
// takes the current time in seconds (Unity: Time.realtimeSinceStartupAsDouble).
using System;

namespace HriTeleop.Protocol
{
    public enum LinkStatus { NeverConnected, Connected, Lost }

    public sealed class LinkState
    {
        public readonly double TimeoutS;
        public LinkStatus Status { get; private set; }
        public double LastFeedbackS { get; private set; }
        public long PosesReceived, SkeletonsReceived, OutOfOrder, Lost;
        private long lastPoseSeq = -1, lastSkelSeq = -1;
        public PoseFeedback LastPose;
        public SkeletonFeedback LastSkeleton;
        public readonly FeedbackDecoder Decoder = new FeedbackDecoder();

        /// <param name="timeoutS">no feedback for this long = Lost (the robot's own
        /// pulse.health.disconnect_timeout_s is the natural value).</param>
        public LinkState(double timeoutS)
        {
            if (!(timeoutS > 0)) throw new ArgumentOutOfRangeException("timeoutS");
            TimeoutS = timeoutS;
            Status = LinkStatus.NeverConnected;
        }

        /// <summary>One datagram from the robot; returns the decoded packet or null.</summary>
        public object OnDatagram(byte[] data, double nowS)
        {
            object pkt = Decoder.Decode(data);
            if (pkt == null) return null;
            PoseFeedback p = pkt as PoseFeedback;
            if (p != null)
            {
                long d = Ahead(lastPoseSeq, p.Sequence);
                if (d <= 0) { OutOfOrder++; return null; }
                Lost += d - 1;
                lastPoseSeq = p.Sequence; PosesReceived++; LastPose = p;
            }
            SkeletonFeedback s = pkt as SkeletonFeedback;
            if (s != null)
            {
                if (Ahead(lastSkelSeq, s.Sequence) <= 0) { OutOfOrder++; return null; }
                lastSkelSeq = s.Sequence; SkeletonsReceived++; LastSkeleton = s;
            }
            LastFeedbackS = nowS;
            Status = LinkStatus.Connected;
            return pkt;
        }

        /// <summary>How far seq is ahead of last, modulo 2^31 (feedback sequences wrap there):
        /// 1 = the next one, &lt;= 0 = a duplicate or older packet; first packet: 1.</summary>
        public static long Ahead(long last, uint seq)
        {
            if (last < 0) return 1;
            const long mod = 1L << 31;
            long d = ((long)seq - last) % mod;
            if (d < 0) d += mod;
            return d == 0 || d > mod / 2 ? 0 : d;
        }

        /// <summary>Call every frame: Connected -> Lost after TimeoutS of silence.</summary>
        public LinkStatus Update(double nowS)
        {
            if (Status == LinkStatus.Connected && nowS - LastFeedbackS > TimeoutS)
            {
                Status = LinkStatus.Lost;
                lastPoseSeq = lastSkelSeq = -1;   // a restarted robot counts from 0 again
            }
            return Status;
        }
    }
}
