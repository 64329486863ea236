// Package adminauth owns the authorisation of the HTTP admin port (admin.serverPort): which
// requests need an operator, how an operator proves it, and the client side of that proof.
//
// Requests are split by method. GET and HEAD read (/metrics, /health, /shards, /placement,
// /members, /debug/pprof/…); every other method changes state (POST /move, /shards/add,
// /members/add, /members/remove, /import/stats, /restore, and any endpoint added later): the split does
// not depend on a list of paths, so a new POST endpoint is guarded from its first day. The one
// read guarded as a change is GET /backup (OperatorRead): it returns every znode whatever its
// ACL, and its cut stalls the writes of every shard for a moment.
//
// Operators are digest users, as in ZooKeeper: the superDigest user
// (DigestAuthenticationProvider.superDigest) and every entry of corral.admin.digest
// (user:base64(sha1(user:password)), comma separated). A request names one with the header
// ZooKeeper 3.9's AdminServer reads, "Authorization: digest user:password", or with HTTP Basic
// ("Authorization: Basic base64(user:password)").
//
// The rule (Guard.ServeHTTP), for a request that changes state (and for reads too with
// corral.admin.readAuth=true):
//   - credentials that name an operator: served, from any address;
//   - credentials that do not (unknown user, wrong password): 403;
//   - no credentials, from a loopback address, while loopback is trusted: served. Loopback is
//     trusted unless corral.admin.digest is set (corral.admin.trustLoopback overrides);
//   - no credentials otherwise: 401 when some operator credential is configured, else 403
//     (nothing could be sent that would be accepted).
//
// Every refusal is logged at warn level with the remote address, method, path and reason;
// every accepted state change is logged at info level with the operator (or "loopback").
// Passwords are never logged.
//
// With admin.forceHttps the admin port is HTTPS (cluster serves it from the ssl.quorum stores);
// with admin.portUnification (and no admin.forceHttps) it serves HTTP and HTTPS on one port.
// Over HTTPS, a request without credentials whose verified client certificate names a subject
// of corral.admin.x509 is an operator's (logged as x509:<subject>). admin.needClientAuth without
// admin.forceHttps, and corral.admin.x509 with neither, are configuration errors (Settings.Set,
// Settings.Validate).
//
// Callers: cluster parses the keys with Settings.Set and wraps its admin mux in New; the corral
// command and tools/zkimport add credentials to their requests with SetHeader (from
// --admin-auth or CORRAL_ADMIN_AUTH, see FromEnv).
package adminauth
