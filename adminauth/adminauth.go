package adminauth

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/tlsconf"
)

// ErrConfig is returned (wrapped) for admin authorisation keys that cannot be used.
var ErrConfig = errors.New("adminauth: configuration")

// EnvAuth is the environment variable the corral command reads operator credentials
// (user:password) from when --admin-auth is not given.
const EnvAuth = "CORRAL_ADMIN_AUTH"

// Settings are the zoo.cfg keys of admin authorisation.
type Settings struct {
	// Digests are corral.admin.digest's entries, "user:base64(sha1(user:password))".
	Digests []string
	// ReadAuth (corral.admin.readAuth) applies the rule to GET and HEAD too.
	ReadAuth bool
	// TrustLoopback (corral.admin.trustLoopback) says whether requests without credentials
	// from a loopback address are served; nil: trusted unless Digests is set.
	TrustLoopback *bool
	// ForceHTTPS is admin.forceHttps: the admin port serves HTTPS only, from the ssl.quorum.*
	// stores (cluster).
	ForceHTTPS bool
	// PortUnification is admin.portUnification: the admin port serves HTTP and HTTPS (the
	// ssl.quorum.* stores) on one port, telling them apart by a connection's first byte.
	// ForceHTTPS wins when both are set, as in ZooKeeper's JettyAdminServer.
	PortUnification bool
	// NeedClientAuth is admin.needClientAuth (ZooKeeper 3.9): an HTTPS admin client must
	// present a certificate the ssl.quorum trust store verifies. It needs ForceHTTPS (with
	// PortUnification alone plain HTTP would still be served without one).
	NeedClientAuth bool
	// X509 (corral.admin.x509, names separated by ';') are certificate subjects, in RFC 2253
	// form as the x509 scheme writes them (tlsconf.RFC2253Name), that are operators when a
	// verified HTTPS client certificate names one.
	X509 []string
}

// Set applies one zoo.cfg key; it reports false for keys that are not admin authorisation keys.
func (s *Settings) Set(k, v string) (bool, error) {
	var err error
	switch strings.TrimPrefix(k, "zookeeper.") {
	case "corral.admin.digest":
		for _, d := range strings.Split(v, ",") {
			d = strings.TrimSpace(d)
			if d == "" {
				continue
			}
			user, sum, ok := strings.Cut(d, ":")
			if b, derr := base64.StdEncoding.DecodeString(sum); !ok || user == "" || derr != nil || len(b) != 20 {
				return true, fmt.Errorf("%w: %q: want user:base64(sha1(user:password))", ErrConfig, d)
			}
			s.Digests = append(s.Digests, d)
		}
	case "corral.admin.readAuth":
		s.ReadAuth, err = strconv.ParseBool(v)
	case "corral.admin.trustLoopback":
		var b bool
		b, err = strconv.ParseBool(v)
		s.TrustLoopback = &b
	case "admin.needClientAuth":
		s.NeedClientAuth = strings.EqualFold(v, "true")
	case "admin.forceHttps":
		s.ForceHTTPS = strings.EqualFold(v, "true")
	case "admin.portUnification":
		s.PortUnification = strings.EqualFold(v, "true") // Boolean.getBoolean
	case "corral.admin.x509":
		// A subject contains commas (CN=a,O=b), so the list is split on ';'.
		for _, n := range strings.Split(v, ";") {
			if n = strings.TrimSpace(n); n != "" {
				s.X509 = append(s.X509, n)
			}
		}
	default:
		return false, nil
	}
	if err != nil {
		err = fmt.Errorf("%w: %q: want true or false", ErrConfig, v)
	}
	return true, err
}

// HTTPS reports whether the admin port serves HTTPS: only (ForceHTTPS) or beside HTTP
// (PortUnification).
func (s Settings) HTTPS() bool { return s.ForceHTTPS || s.PortUnification }

// Validate refuses settings that cannot be honoured.
func (s Settings) Validate() error {
	if s.NeedClientAuth && !s.ForceHTTPS {
		if s.PortUnification {
			return fmt.Errorf("%w: admin.needClientAuth=true with admin.portUnification=true: plain HTTP on the same port would still be served without a certificate; set admin.forceHttps=true", ErrConfig)
		}
		return fmt.Errorf("%w: admin.needClientAuth=true needs admin.forceHttps=true: without HTTPS there is no client certificate to ask for", ErrConfig)
	}
	if len(s.X509) > 0 && !s.HTTPS() {
		return fmt.Errorf("%w: corral.admin.x509 needs admin.forceHttps=true or admin.portUnification=true: without HTTPS there is no client certificate", ErrConfig)
	}
	return nil
}

// Guard is the admin port's authorising handler (the rule is in the package doc).
type Guard struct {
	next          http.Handler
	log           *slog.Logger
	ids           []string // operator digest ids: superDigest and corral.admin.digest
	x509          []string // operator certificate subjects: corral.admin.x509
	readAuth      bool
	trustLoopback bool
}

// New wraps next. superDigest is the server's "user:base64" super id ("" for none).
func New(s Settings, superDigest string, log *slog.Logger, next http.Handler) *Guard {
	g := &Guard{next: next, log: log, readAuth: s.ReadAuth, trustLoopback: len(s.Digests) == 0}
	if s.TrustLoopback != nil {
		g.trustLoopback = *s.TrustLoopback
	}
	if superDigest = strings.TrimSpace(superDigest); superDigest != "" {
		g.ids = append(g.ids, superDigest)
	}
	g.ids = append(g.ids, s.Digests...)
	g.x509 = s.X509
	return g
}

// ServeHTTP serves r through the wrapped handler or refuses it.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	read := (r.Method == http.MethodGet || r.Method == http.MethodHead) && !OperatorRead(r.URL.Path)
	if read && !g.readAuth {
		g.next.ServeHTTP(w, r)
		return
	}
	refuse := func(code int, why string) {
		g.log.Warn("admin request refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "status", code, "why", why)
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="corral admin"`)
		}
		http.Error(w, why, code)
	}
	cred, present := credential(r)
	subject := g.certOperator(r)
	switch {
	case !present && subject != "":
		if !read {
			g.log.Info("admin request", "operator", "x509:"+subject, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		}
	case present && cred == "":
		refuse(http.StatusUnauthorized, `unreadable Authorization header: want "digest user:password" or Basic`)
		return
	case present:
		user, _, _ := strings.Cut(cred, ":")
		if !g.operator(cred) {
			refuse(http.StatusForbidden, fmt.Sprintf("%q is not an admin operator (superDigest, corral.admin.digest) or the password is wrong", user))
			return
		}
		if !read {
			g.log.Info("admin request", "operator", user, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		}
	case g.trustLoopback && loopback(r.RemoteAddr):
		if !read {
			g.log.Info("admin request", "operator", "loopback", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		}
	case len(g.ids) == 0 && len(g.x509) == 0:
		refuse(http.StatusForbidden, "no admin operator is configured (corral.admin.digest or superDigest): this request is served from loopback only")
		return
	default:
		refuse(http.StatusUnauthorized, `this request needs an admin operator: send "Authorization: digest user:password"`)
		return
	}
	g.next.ServeHTTP(w, r)
}

// OperatorRead reports whether a GET of path needs an operator as a change does: GET /backup,
// which returns every znode whatever its ACL and stalls every shard's writes for its cut.
func OperatorRead(path string) bool { return path == "/backup" }

// operator reports whether cred ("user:password") derives one of the operator ids. Every id is
// compared, in constant time, whatever matched.
func (g *Guard) operator(cred string) bool {
	id := []byte(acl.Digest(cred))
	ok := 0
	for _, want := range g.ids {
		ok |= subtle.ConstantTimeCompare(id, []byte(want))
	}
	return ok == 1
}

// credential returns the "user:password" of r's Authorization header and whether it has one;
// "" with true for a header that is not "digest user:password" nor valid Basic.
func credential(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "digest") && strings.Contains(rest, ":"):
		return rest, true
	case strings.EqualFold(scheme, "basic"):
		if user, pass, ok := r.BasicAuth(); ok && user != "" {
			return user + ":" + pass, true
		}
	}
	return "", true
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SetHeader adds credentials ("user:password") to an admin request in ZooKeeper 3.9's form,
// "Authorization: digest user:password". An empty cred leaves req as it is.
func SetHeader(req *http.Request, cred string) {
	if cred != "" {
		req.Header.Set("Authorization", "digest "+cred)
	}
}

// FromEnv returns flag when it is set, else the CORRAL_ADMIN_AUTH environment variable.
func FromEnv(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(EnvAuth)
}

// certOperator returns the subject of r's client certificate when the TLS handshake verified
// it and corral.admin.x509 names it an operator; "" otherwise.
func (g *Guard) certOperator(r *http.Request) string {
	if len(g.x509) == 0 || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return ""
	}
	name, err := tlsconf.RFC2253Name(r.TLS.VerifiedChains[0][0])
	if err != nil {
		return ""
	}
	for _, n := range g.x509 {
		if n == name {
			return name
		}
	}
	return ""
}
