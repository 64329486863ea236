"""One side of the kazoo lock test (tests/fault/kazoo_lock_test.go).

usage: kazoo_lock.py HOSTS NAME SESSION_TIMEOUT_S

Connects to HOSTS, acquires kazoo's Lock recipe at /lk, and prints one JSON
line per event, with the wall-clock time (the test compares times of two
processes on one machine): {"ev": "acquired"} once it holds the lock, and the
connection states kazoo reports ("SUSPENDED", "LOST", "CONNECTED"). It holds
the lock until stdin closes, then releases it and exits.
"""
import json
import sys
import threading
import time

from kazoo.client import KazooClient

hosts, name, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
out_lock = threading.Lock()


def emit(ev, **kw):
    with out_lock:
        print(json.dumps(dict(ev=ev, t=time.time(), **kw)), flush=True)


zk = KazooClient(hosts=hosts, timeout=timeout, connection_retry=dict(max_tries=-1, delay=0.1, max_delay=1),
                 command_retry=dict(max_tries=-1, delay=0.1, max_delay=1))
zk.add_listener(lambda state: emit(str(state)))
zk.start(timeout=30)
lock = zk.Lock("/lk", name)
lock.acquire()
emit("acquired")
sys.stdin.read()  # hold until the test closes stdin
try:
    lock.release()
except Exception:
    pass
zk.stop()
zk.close()
