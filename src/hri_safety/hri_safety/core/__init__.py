from hri_safety.core.stop import StopLatch, StopParams, StopWatch, sanitize_source

__all__ = ["StopLatch", "StopParams", "StopWatch", "sanitize_source"]
