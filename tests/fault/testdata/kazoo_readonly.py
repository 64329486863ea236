"""A read-only client for the read-only mode test (tests/fault/readonly_test.go).

usage: kazoo_readonly.py HOST PATH SESSION_TIMEOUT_S

Connects to HOST with kazoo's read_only=True and, every 100 ms until stdin
closes, reads PATH and tries to write it. It prints one JSON line per change of
what it sees, with the wall-clock time: the client state ("CONNECTED",
"CONNECTED_RO", "CONNECTING", ...), its session id, the data read (or the
error's class name) and the write's outcome ("ok" or the error's class name).
"""
import json
import sys
import threading
import time

from kazoo.client import KazooClient

host, path, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
stop = threading.Event()


def watch_stdin():
    sys.stdin.read()
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()
zk = KazooClient(hosts=host, timeout=timeout, read_only=True,
                 connection_retry=dict(max_tries=-1, delay=0.1, max_delay=0.5),
                 command_retry=dict(max_tries=0))
zk.start(timeout=30)
last = None
n = 0
while not stop.is_set():
    state = str(zk.client_state)
    try:
        data = zk.get(path)[0].decode()
    except Exception as e:  # noqa: BLE001 - the class name is the observation
        data = "!" + type(e).__name__
    n += 1
    try:
        zk.set(path + "-w", str(n).encode())
        wrote = "ok"
    except Exception as e:  # noqa: BLE001
        wrote = "!" + type(e).__name__
    sid = "%x" % (zk.client_id or (0, b""))[0]
    seen = (state, sid, data, wrote)
    if seen != last:
        print(json.dumps(dict(t=time.time(), state=state, sid=sid, data=data, write=wrote)), flush=True)
        last = seen
    time.sleep(0.1)
zk.stop()
zk.close()
