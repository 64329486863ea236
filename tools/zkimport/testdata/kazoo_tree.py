"""Builds the tree of tools/zkimport's TestImportKazooTree with kazoo, the way applications do.

Usage: kazoo_tree.py HOSTS

Through kazoo's own calls and recipes it makes: binary and empty data (kazoo cannot send null
data), digest ACLs, a Queue with a gap (one entry taken, one deleted), a lock, a counter, a
party and an election (their ephemerals stay while this process runs), rewritten data and ACLs,
several top-level subtrees and a few thousand znodes created asynchronously. It prints "ready"
once the tree is built and keeps its session (and its ephemerals) until stdin closes.
"""
import sys

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE

hosts = sys.argv[1]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=30)
zk.add_auth("digest", "user:pass")

secret = [make_digest_acl("user", "pass", all=True)]
zk.create("/svc", b"service")
zk.create("/svc/bin", bytes([0, 0xFF, 7, 0x80]))
zk.create("/svc/empty", b"")
zk.create("/svc/secret", b"s", acl=secret)
zk.create("/svc/secret/inner", b"i", acl=secret)
zk.ensure_path("/svc/deep/a/b/c/d")
zk.create("/svc/cfg", b"v0")
for i in range(1, 4):
    zk.set("/svc/cfg", ("v%d" % i).encode())
zk.create("/svc/acl", b"")
zk.set_acls("/svc/acl", [make_digest_acl("user", "pass", read=True, write=True)] + OPEN_ACL_UNSAFE)

# A queue with a gap: kazoo's Queue puts sequential entries; one is taken, one deleted.
q = zk.Queue("/jobs")
for i in range(6):
    q.put(("job-%d" % i).encode())
assert q.get() == b"job-0"
entries = sorted(zk.get_children("/jobs"))
zk.delete("/jobs/" + entries[2])

# Recipes that leave ephemerals and counters behind.
lock = zk.Lock("/locks/res", "holder-1")
assert lock.acquire(timeout=10)
counter = zk.Counter("/counters/c")
counter += 5
counter -= 2
party = zk.Party("/party", "member-1")
party.join()
zk.create("/svc/session", b"mine", ephemeral=True)

# Several top-level subtrees with a few thousand znodes, created asynchronously.
tops = ["/kafka", "/hbase", "/solr", "/brokers"]
for t in tops:
    zk.ensure_path(t + "/nodes")
pending = []
for i in range(3000):
    t = tops[i % len(tops)]
    pending.append(zk.create_async("%s/nodes/n%05d" % (t, i), ("%d" % i).encode()))
for p in pending:
    p.get(timeout=60)
zk.set("/kafka/nodes", b"rewritten")

print("ready", flush=True)
sys.stdin.read()
lock.release()
zk.stop()
zk.close()
