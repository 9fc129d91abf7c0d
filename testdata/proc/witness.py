"""witness.py DIR: leave two processes behind and exit. One stays in the
process group, one leaves it for a group of its own (same session). Each
writes, when SIGTERM reaches it, the state of this script's process as
/proc shows it ("Z" while it is an unreaped zombie, "gone" once reaped) to
DIR/in-group or DIR/out-of-group, and exits. The script exits once both
are ready for the signal.
"""
import os, signal, sys, time

out, leader = sys.argv[1], os.getpid()


def witness(name):
    def on_term(*_):
        try:
            with open("/proc/%d/stat" % leader) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        with open(os.path.join(out, name), "w") as f:
            f.write(state)
        os._exit(0)
    signal.signal(signal.SIGTERM, on_term)


r, w = os.pipe()
for name in ("in-group", "out-of-group"):
    if os.fork() == 0:
        os.close(r)
        if name == "out-of-group":
            os.setpgid(0, 0)
        witness(name)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(w, b"x")
        os.close(w)
        while True:
            time.sleep(60)
os.close(w)
os.read(r, 1)
os.read(r, 1)
