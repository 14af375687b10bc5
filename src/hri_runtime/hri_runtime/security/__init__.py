"""Access control, as sros2: access classes, per-role allow-lists, bind rules."""
