"""1 kHz Lie-group impedance/admittance controllers with passivity filters."""
