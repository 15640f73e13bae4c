"""What the tool tests share: a failure ends the test with its reason."""
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)
