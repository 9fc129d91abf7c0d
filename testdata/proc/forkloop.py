"""forkloop.py MARKER [setsid]: leave behind a process that forks and
exits in a loop, so that no process of it lives for long, and returns once
the loop runs. Each new process leaves its parent's process group
(setpgid(0, 0)) and ignores SIGTERM, as issue 22's attacker did, and
rewrites MARKER with "PID SID" (its pid and session id) before it forks
the next. With "setsid" the loop starts in a session of its own. Its
stdio is /dev/null, so it holds none of its caller's pipes. The loop ends
once MARKER's directory is gone, so that a test which finds it still
running (a failure) does not leave it running on the machine after the
test's temporary directory is removed.
"""
import os, signal, sys

marker = sys.argv[1]
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    if sys.argv[2:] == ["setsid"]:
        os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    out = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644)
    home = os.path.dirname(os.path.abspath(marker))
    while os.path.isdir(home):
        os.setpgid(0, 0)
        os.pwrite(out, ("%d %d" % (os.getpid(), os.getsid(0))).ljust(40).encode(), 0)
        if w >= 0:
            os.write(w, b"x")
            os.close(w)
            w = -1
        if os.fork() != 0:
            os._exit(0)
    os._exit(0)
os.close(w)
os.read(r, 1)
