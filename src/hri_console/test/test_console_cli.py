"""`hri console` refuses a non-loopback bind without a token (config fr3 has no token)."""
from hri_console.cli import main


def test_cli_refuses_public_bind_without_token(capsys):
    assert main(["--robot", "fr3", "--host", "0.0.0.0", "--check"]) == 2
    assert "console.token must be set" in capsys.readouterr().err


def test_cli_loopback_check_ok(capsys):
    assert main(["--robot", "fr3", "--check"]) == 0
    assert "127.0.0.1" in capsys.readouterr().out
