package sasl

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/corral/corral/wire"
)

// ProviderClass is the class name ZooKeeper operators give authProvider.N to enable the
// "sasl" ACL scheme.
const ProviderClass = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// DigestLoginModule is the JAAS login module whose user_NAME="password" options list the
// DIGEST-MD5 users.
const DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// Krb5LoginModule is the JAAS login module of a Kerberos service: useKeyTab=true,
// keyTab="FILE" and principal="service/host@REALM" give the server's keys (GSSAPI).
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// JAASFlag is the Java system property naming the JAAS file.
const JAASFlag = "java.security.auth.login.config"

// Krb5ConfFlag is the Java system property naming the Kerberos configuration (default
// /etc/krb5.conf), read for its default realm.
const Krb5ConfFlag = "java.security.krb5.conf"

// DefaultKrb5Conf is the Kerberos configuration read without Krb5ConfFlag.
const DefaultKrb5Conf = "/etc/krb5.conf"

// Config holds the SASL settings. ZooKeeper reads them as Java system properties, which
// zoo.cfg keys it does not know become (prefixed with "zookeeper."); Corral accepts every one
// both with and without the prefix, in zoo.cfg and as -D flags in SERVER_JVMFLAGS (a zoo.cfg
// key wins over a flag, as in ZooKeeper, which sets the properties after the JVM started).
type Config struct {
	// JAASFile is the JAAS login configuration (corral.jaasConfig, or
	// -Djava.security.auth.login.config in SERVER_JVMFLAGS); empty: no SASL server.
	JAASFile string
	// Section is the JAAS section of the server's users (zookeeper.sasl.serverconfig,
	// default "Server").
	Section string
	// Providers are the authProvider.N class names, by N.
	Providers map[string]string
	// EnforceAuth and EnforceSchemes: zookeeper.enforce.auth.enabled and .schemes.
	EnforceAuth    bool
	EnforceSchemes []string
	// RequireSASL is zookeeper.sessionRequireClientSASLAuth: enforcement of the sasl scheme,
	// whatever enforce.auth.* say.
	RequireSASL bool
	// AllowFailed is zookeeper.allowSaslFailedClients: a failed exchange keeps the connection
	// (unless SASL is required).
	AllowFailed bool
	// SuperUser (zookeeper.superUser) is the SASL id that also gets the super identity;
	// SuperPassword (zookeeper.SASLAuthenticationProvider.superPassword) replaces the JAAS
	// password of the user "super".
	SuperUser     string
	SuperPassword string
	// Krb5Conf is the Kerberos configuration (-Djava.security.krb5.conf in
	// SERVER_JVMFLAGS, or corral.krb5Conf); empty: DefaultKrb5Conf.
	Krb5Conf string
	// RemoveHost and RemoveRealm: zookeeper.kerberos.removeHostFromPrincipal and
	// removeRealmFromPrincipal (see AuthorizationID).
	RemoveHost  bool
	RemoveRealm bool

	fromCfg map[string]bool // canonical keys zoo.cfg set (flags do not override them)
}

// IsKey reports whether a zoo.cfg key is a SASL setting.
func IsKey(k string) bool {
	_, ok := canonicalKey(k)
	return ok
}

// canonicalKey maps a zoo.cfg key or -D property to the setting's name without the
// "zookeeper." prefix.
func canonicalKey(k string) (string, bool) {
	if k == "corral.jaasConfig" || k == JAASFlag {
		return JAASFlag, true
	}
	if k == "corral.krb5Conf" || k == Krb5ConfFlag {
		return Krb5ConfFlag, true
	}
	k = strings.TrimPrefix(k, "zookeeper.")
	switch k {
	case "sasl.serverconfig", "enforce.auth.enabled", "enforce.auth.schemes",
		"sessionRequireClientSASLAuth", "allowSaslFailedClients", "superUser",
		"SASLAuthenticationProvider.superPassword", "kerberos.removeHostFromPrincipal",
		"kerberos.removeRealmFromPrincipal":
		return k, true
	}
	if n, ok := strings.CutPrefix(k, "authProvider."); ok && n != "" {
		return k, true
	}
	return "", false
}

// Set applies one zoo.cfg key (IsKey must hold).
func (c *Config) Set(k, v string) error {
	ck, ok := canonicalKey(k)
	if !ok {
		return fmt.Errorf("%w: %q is not a SASL setting", ErrConfig, k)
	}
	if c.fromCfg == nil {
		c.fromCfg = map[string]bool{}
	}
	c.fromCfg[ck] = true
	c.set(ck, v)
	return nil
}

// set stores a setting; booleans read as Java's Boolean.parseBoolean ("true" in any case),
// the kerberos ones as ZooKeeper's "true".equals.
func (c *Config) set(ck, v string) {
	isTrue := strings.EqualFold(v, "true")
	switch ck {
	case JAASFlag:
		c.JAASFile = v
	case Krb5ConfFlag:
		c.Krb5Conf = v
	case "sasl.serverconfig":
		c.Section = v
	case "enforce.auth.enabled":
		c.EnforceAuth = isTrue
	case "enforce.auth.schemes":
		c.EnforceSchemes = nil
		for _, s := range strings.Split(v, ",") {
			c.EnforceSchemes = append(c.EnforceSchemes, strings.TrimSpace(s))
		}
	case "sessionRequireClientSASLAuth":
		c.RequireSASL = isTrue
	case "allowSaslFailedClients":
		c.AllowFailed = isTrue
	case "superUser":
		c.SuperUser = v
	case "SASLAuthenticationProvider.superPassword":
		c.SuperPassword = v
	case "kerberos.removeHostFromPrincipal":
		c.RemoveHost = v == "true"
	case "kerberos.removeRealmFromPrincipal":
		c.RemoveRealm = v == "true"
	default:
		if n, ok := strings.CutPrefix(ck, "authProvider."); ok {
			if c.Providers == nil {
				c.Providers = map[string]string{}
			}
			c.Providers[n] = v
		}
	}
}

// ApplyJVMFlags applies the -D flags of a SERVER_JVMFLAGS value (split as the shell would,
// with ' and " quoting) that are SASL settings, except those zoo.cfg set.
func (c *Config) ApplyJVMFlags(flags string) error {
	args, err := splitShell(flags)
	if err != nil {
		return fmt.Errorf("%w: SERVER_JVMFLAGS: %v", ErrConfig, err)
	}
	for _, a := range args {
		kv, ok := strings.CutPrefix(a, "-D")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		ck, ok := canonicalKey(k)
		if !ok || k == "corral.jaasConfig" || k == "corral.krb5Conf" || c.fromCfg[ck] {
			continue
		}
		if ck == JAASFlag {
			v = strings.TrimPrefix(v, "=") // -Djava.security.auth.login.config==file
		}
		c.set(ck, v)
	}
	return nil
}

// splitShell splits s into words as a POSIX shell would without expansions.
func splitShell(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'' || c == '"':
			in = true
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(s):
			in = true
			i++
			cur.WriteByte(s[i])
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// SASLProvider reports whether authProvider.N names the SASL provider.
func (c *Config) SASLProvider() bool {
	for _, p := range c.Providers {
		if strings.TrimSpace(p) == ProviderClass {
			return true
		}
	}
	return false
}

// schemes returns the enforced schemes and whether enforcement is on, as ZooKeeper's
// AuthenticationHelper: sessionRequireClientSASLAuth means exactly {sasl}.
func (c *Config) schemes() ([]string, bool) {
	if c.RequireSASL {
		return []string{"sasl"}, true
	}
	return c.EnforceSchemes, c.EnforceAuth
}

// Load checks the settings and reads the JAAS file. It fails, as ZooKeeper fails to start,
// when enforcement is on without schemes or with a scheme no provider serves, when the JAAS
// file cannot be read or parsed, when its server section uses a login module other than
// DigestLoginModule and Krb5LoginModule, or when a Krb5LoginModule's keytab lacks its
// principal's keys. A JAAS file without the server section leaves SASL off, as in ZooKeeper,
// with a warning.
func (c *Config) Load(log *slog.Logger) (*Auth, error) {
	if log == nil {
		log = slog.Default()
	}
	a := &Auth{cfg: *c}
	for n, class := range c.Providers {
		switch strings.TrimSpace(class) {
		case ProviderClass, "org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
			"org.apache.zookeeper.server.auth.IPAuthenticationProvider":
		default:
			log.Warn("authentication provider not available, ignored", "key", "authProvider."+n, "class", class)
		}
	}
	schemes, on := c.schemes()
	a.enforce, a.saslRequired = on, on && slices.Contains(schemes, "sasl")
	if on {
		if len(schemes) == 0 || (len(schemes) == 1 && schemes[0] == "") {
			return nil, fmt.Errorf("%w: zookeeper.enforce.auth.enabled is true: zookeeper.enforce.auth.schemes must be configured", ErrConfig)
		}
		for _, s := range schemes {
			if s != "ip" && s != "digest" && !(s == "sasl" && c.SASLProvider()) {
				return nil, fmt.Errorf("%w: enforced authentication scheme %q is not available (authProvider.N=%s enables sasl)", ErrConfig, s, ProviderClass)
			}
		}
		a.schemes = schemes
	}
	if c.JAASFile == "" {
		return a, nil
	}
	f, err := os.Open(c.JAASFile)
	if err != nil {
		return nil, fmt.Errorf("%w: JAAS file: %v", ErrConfig, err)
	}
	defer f.Close()
	j, err := ParseJAAS(c.JAASFile, f)
	if err != nil {
		return nil, err
	}
	section := c.Section
	if section == "" {
		section = "Server"
	}
	entries, ok := j.Sections[section]
	if !ok {
		log.Warn("JAAS file has no server section: SASL authentication is off", "file", c.JAASFile, "section", section)
		return a, nil
	}
	a.defaultRealm = defaultRealm(c.Krb5Conf, log)
	var krb *JAASEntry
	users := map[string]string{}
	for i, e := range entries {
		switch e.Module {
		case DigestLoginModule:
			for k, v := range e.Options {
				if user, ok := strings.CutPrefix(k, "user_"); ok {
					users[user] = v
				}
			}
		case Krb5LoginModule:
			if krb == nil {
				krb = &entries[i]
			}
		default:
			return nil, fmt.Errorf("%w: %s:%d: login module %s: only %s (DIGEST-MD5) and %s (GSSAPI) are supported",
				ErrConfig, c.JAASFile, e.Line, e.Module, DigestLoginModule, Krb5LoginModule)
		}
	}
	if krb == nil {
		a.users = users
		log.Info("SASL DIGEST-MD5 authentication on", "file", c.JAASFile, "section", section, "users", len(a.users))
		return a, nil
	}
	// As in ZooKeeper, a server whose login has a Kerberos principal runs GSSAPI only.
	if len(users) > 0 {
		log.Warn("JAAS server section has a Kerberos login: SASL is GSSAPI only, as in ZooKeeper; its DIGEST-MD5 users are not used",
			"file", c.JAASFile, "section", section)
	}
	if err := a.loadKerberos(c.JAASFile, krb); err != nil {
		return nil, err
	}
	log.Info("SASL GSSAPI (Kerberos) authentication on", "file", c.JAASFile, "section", section,
		"principal", a.principalString(), "keytab", a.keytabFile, "default_realm", a.defaultRealm)
	return a, nil
}

// loadKerberos reads the keytab of a Krb5LoginModule entry and checks it holds the
// principal's keys (ZooKeeper's login fails at start-up without them).
func (a *Auth) loadKerberos(file string, e *JAASEntry) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s: %s", ErrConfig, file, e.Line, Krb5LoginModule, fmt.Sprintf(format, args...))
	}
	if !strings.EqualFold(e.Options["useKeyTab"], "true") {
		return bad("useKeyTab=true is required (a server cannot prompt for a password or use a ticket cache)")
	}
	a.keytabFile = e.Options["keyTab"]
	if a.keytabFile == "" {
		a.keytabFile = "/etc/krb5.keytab"
	}
	kt, err := keytab.Load(a.keytabFile)
	if err != nil {
		return bad("keyTab %s: %v", a.keytabFile, err)
	}
	p := e.Options["principal"]
	switch {
	case p == "":
		return bad("principal is required (principal=\"zookeeper/HOST@REALM\")")
	case p == "*":
		// Any principal of the keytab (Java's acceptor with isInitiator=false).
	default:
		pn, realm := types.ParseSPNString(p)
		if realm == "" {
			realm = a.defaultRealm
		}
		found := false
		for _, k := range kt.Entries {
			if k.Principal.Realm == realm && slices.Equal(k.Principal.Components, pn.NameString) {
				found = true
			}
		}
		if !found {
			return bad("keyTab %s has no key for %s@%s", a.keytabFile, pn.PrincipalNameString(), realm)
		}
		a.principal, a.principalRealm = &pn, realm
	}
	a.keytab = kt
	a.replay = &ReplayCache{}
	return nil
}

// principalString names the service principal ("*" for any of the keytab).
func (a *Auth) principalString() string {
	if a.principal == nil {
		return "*"
	}
	return a.principal.PrincipalNameString() + "@" + a.principalRealm
}

// defaultRealm is the default realm of the Kerberos configuration (libdefaults
// default_realm), which names without another realm are canonicalised against, as ZooKeeper's
// KerberosName does; "" when the file does not exist or names none.
func defaultRealm(file string, log *slog.Logger) string {
	if file == "" {
		file = DefaultKrb5Conf
	}
	b, err := os.ReadFile(file)
	if err != nil {
		if !os.IsNotExist(err) || file != DefaultKrb5Conf {
			log.Warn("Kerberos configuration not readable: no default realm", "file", file, "err", err)
		}
		return ""
	}
	return parseDefaultRealm(string(b))
}

// parseDefaultRealm returns default_realm from the [libdefaults] section of krb5.conf text.
func parseDefaultRealm(s string) string {
	in := false
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			in = strings.HasPrefix(line, "[libdefaults]")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if in && ok && strings.TrimSpace(k) == "default_realm" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Auth is the loaded SASL configuration every connection shares; immutable and safe for
// concurrent use. A nil *Auth is a server without SASL or enforcement.
type Auth struct {
	cfg          Config
	users        map[string]string // DIGEST-MD5; nil: no DIGEST-MD5 server
	defaultRealm string            // of the Kerberos configuration
	// GSSAPI: keytab nil without a Krb5LoginModule; principal nil accepts any of the keytab.
	keytab         *keytab.Keytab
	keytabFile     string
	principal      *types.PrincipalName
	principalRealm string
	replay         *ReplayCache
	enforce        bool
	saslRequired   bool
	schemes        []string
}

// Server reports whether a SASL server is configured: without one, ZooKeeper answers every
// sasl packet OK with no token and adds no identity.
func (a *Auth) Server() bool { return a != nil && (a.users != nil || a.keytab != nil) }

// Mechanism names the server's one SASL mechanism: "GSSAPI" when the JAAS server section has
// a Krb5LoginModule, "DIGEST-MD5" otherwise (ZooKeeper's choice; a client does not negotiate
// it).
func (a *Auth) Mechanism() string {
	if a.keytab != nil {
		return "GSSAPI"
	}
	return "DIGEST-MD5"
}

// Exchange is one connection's server side of the SASL mechanism.
type Exchange interface {
	// Step consumes the client's token and returns the server's next one; an error ends
	// the exchange.
	Step(token []byte) ([]byte, error)
	// Complete reports whether the client has been authenticated.
	Complete() bool
	// User is the authenticated name once Complete.
	User() string
}

// NewExchange starts the exchange of the server's mechanism for one connection from
// clientIP (nil when unknown).
func (a *Auth) NewExchange(clientIP net.IP) Exchange {
	if a.keytab != nil {
		return NewGSSAPI(GSSAPIOptions{Keytab: a.keytab, Principal: a.principal, ClientAddr: clientIP, Replay: a.replay})
	}
	return NewDigestMD5(DigestOptions{Realm: ZooKeeperRealm, DigestURI: ZooKeeperDigestURI, Password: a.password})
}

// password is SaslServerCallbackHandler's lookup: the user must be in the JAAS section;
// superPassword replaces the password of "super".
func (a *Auth) password(user string) (string, bool) {
	p, ok := a.users[user]
	if ok && user == "super" && a.cfg.SuperPassword != "" {
		p = a.cfg.SuperPassword
	}
	return p, ok
}

// Identity returns the id a completed exchange adds to the connection (scheme "sasl") and
// whether it is also super (zookeeper.superUser).
func (a *Auth) Identity(user string) (string, bool, error) {
	id, err := AuthorizationID(user, a.defaultRealm, a.cfg.RemoveHost, a.cfg.RemoveRealm)
	if err != nil {
		return "", false, err
	}
	return id, a.cfg.SuperUser != "" && id == a.cfg.SuperUser, nil
}

// Admits reports whether a connection with these identities may send requests other than
// auth and sasl: always, unless enforcement is on and none of the ids has an enforced scheme
// (AuthenticationHelper.enforceAuthentication).
func (a *Auth) Admits(ids []wire.ID) bool {
	if a == nil || !a.enforce {
		return true
	}
	for _, id := range ids {
		if slices.Contains(a.schemes, id.Scheme) {
			return true
		}
	}
	return false
}

// FailureCode is the error a failed exchange is answered with (a request refused by
// enforcement always gets SESSIONCLOSEDREQUIRESASLAUTH):
// SESSIONCLOSEDREQUIRESASLAUTH when the sasl scheme is enforced, AUTHFAILED otherwise.
func (a *Auth) FailureCode() wire.Err {
	if a.saslRequired {
		return wire.ErrSessionClosedRequireSASL
	}
	return wire.ErrAuthFailed
}

// KeepFailed reports whether a connection whose exchange failed stays open
// (allowSaslFailedClients, when SASL is not required).
func (a *Auth) KeepFailed() bool { return a.cfg.AllowFailed && !a.saslRequired }
