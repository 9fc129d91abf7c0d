"""escape.py MODE PIDFILE [UNTIL]: start a process that tries to outlive
its caller, write its pid to PIDFILE, and return once it is set up.

MODE is how it leaves: "setpgid" (os.setpgid(0, 0)) or "setpgrp" leave
the process group but not the session; "setsid" starts a new session. It
then sleeps 405 s, or until the file UNTIL exists. Its stdio is /dev/null,
so it holds none of its caller's pipes.
"""
import os, sys, time

mode, pidfile = sys.argv[1], sys.argv[2]
until = sys.argv[3] if len(sys.argv) > 3 else None
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    {"setpgid": lambda: os.setpgid(0, 0), "setpgrp": os.setpgrp, "setsid": os.setsid}[mode]()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pidfile + ".tmp", pidfile)
    os.write(w, b"x")
    os.close(w)
    deadline = time.time() + 405
    while time.time() < deadline and not (until and os.path.exists(until)):
        time.sleep(0.01)
    os._exit(0)
os.close(w)
os.read(r, 1)
