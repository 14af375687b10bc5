"""PID tuning service: recorder, playback, metrics, relay auto-tuning, heuristics, reports."""
