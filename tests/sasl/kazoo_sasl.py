"""Runs kazoo operations against a ZooKeeper-protocol server as one SASL DIGEST-MD5 user and
prints one line per outcome (the Go tests compare them between servers).

usage: kazoo_sasl.py HOSTS USER PASSWORD OP...   (USER "" = no SASL; USER "GSSAPI" = Kerberos
with the credentials of the environment, KRB5_CONFIG and KRB5CCNAME; tests/kerberos)
OP: create:PATH:ACLUSER (ACL sasl:ACLUSER:cdrwa), get:PATH, getacl:PATH, whoami

A failed SASL exchange is reported as the one line "start: auth failed" (then kazoo's
"log: AUTH_FAILED closing: ..." warning): kazoo handles it on its connection thread, and
whether start() has returned by then (the operations then fail with AuthFailedError) or
times out (its connected state is withdrawn before it sees it) is a race inside kazoo, which
the server's speed decides, not what the server answered. Other warnings are printed last
as "log:" lines for the same reason.
"""
import logging
import sys

from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions


class Collect(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


logs = Collect()
logging.getLogger().addHandler(logs)
out = []


def finish(zk):
    zk.stop()
    zk.close()
    if any(line.startswith("AUTH_FAILED") for line in logs.lines):
        out[:] = ["start: auth failed"]
    for line in out + ["log: %s" % line for line in logs.lines]:
        print(line)
    sys.exit(0)


hosts, user, password = sys.argv[1:4]
opts = None
if user == "GSSAPI":
    opts = {"mechanism": "GSSAPI"}
elif user:
    opts = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
states = []
zk = KazooClient(hosts=hosts, sasl_options=opts, timeout=10,
                 connection_retry={"max_tries": 0})
zk.add_listener(lambda s: states.append(str(s)))
try:
    zk.start(timeout=15)
    out.append("start: ok")
except Exception as e:  # noqa: BLE001 - the class is the outcome
    out.append("start: %s" % type(e).__name__)
    out.append("states: %s" % ",".join(states))
    finish(zk)

for op in sys.argv[4:]:
    kind, _, arg = op.partition(":")
    try:
        if kind == "create":
            path, _, acluser = arg.partition(":")
            acl = ACL(Permissions.ALL, Id("sasl", acluser))
            out.append("create: %s" % zk.create(path, b"x", acl=[acl]))
        elif kind == "get":
            out.append("get: %r" % zk.get(arg)[0])
        elif kind == "getacl":
            out.append("getacl: %s" % ["%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in zk.get_acls(arg)[0]])
        else:
            raise SystemExit("unknown op " + op)
    except Exception as e:  # noqa: BLE001
        out.append("%s: %s" % (kind, type(e).__name__))
finish(zk)
