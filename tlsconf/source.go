package tlsconf

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Source holds the secure client port's current *tls.Config and replaces it when the store
// files change. Config may be called from any goroutine; Run is called once, by the Source's
// owner, and returns when its context ends.
type Source struct {
	set   Settings
	log   *slog.Logger
	cur   atomic.Pointer[tls.Config]
	stamp string // the files' state cur was built from; owned by Run after NewSource
}

// NewSource validates the settings and loads the stores. Unsupported cipher suite names are
// logged (warn) and left out; an error names the key at fault.
func NewSource(s Settings, log *slog.Logger) (*Source, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	src := &Source{set: s, log: log}
	cfg, err := src.build(true)
	if err != nil {
		return nil, err
	}
	src.stamp = src.filesStamp()
	src.cur.Store(cfg)
	return src, nil
}

// Config returns the configuration a new connection's handshake uses.
func (src *Source) Config() *tls.Config { return src.cur.Load() }

// Run polls the store files every ReloadInterval and reloads them when one changed (its size,
// modification time or inode). A reload that fails keeps the current configuration and logs
// why, once per change of the files. It returns at once when reloading is off
// (client.certReload=false).
func (src *Source) Run(ctx context.Context) {
	if !src.set.Reload {
		return
	}
	t := time.NewTicker(src.set.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		stamp := src.filesStamp()
		if stamp == src.stamp {
			continue
		}
		src.stamp = stamp
		cfg, err := src.build(false)
		if err != nil {
			src.log.Error("TLS stores changed on disk but cannot be loaded; the "+src.set.what()+" keeps the previous certificates", "err", err)
			continue
		}
		src.cur.Store(cfg)
		src.log.Info("TLS stores reloaded; new connections use them", "port", src.set.what(), "keyStore", src.set.KeyStore.Location, "trustStore", src.set.TrustStore.Location,
			"subject", cfg.Certificates[0].Leaf.Subject.String(), "notAfter", cfg.Certificates[0].Leaf.NotAfter)
	}
}

// filesStamp describes the store files' current state; a file that cannot be read is
// described by its error.
func (src *Source) filesStamp() string {
	var b strings.Builder
	files := src.set.KeyStore.files()
	if src.set.TrustStore.Location != "" {
		files = append(files, src.set.TrustStore.files()...)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s:%v;", f, err)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d:%d;", f, fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	}
	return b.String()
}

// build loads the stores and makes the server configuration. first logs the facts that do not
// change on a reload (cipher suites left out).
func (src *Source) build(first bool) (*tls.Config, error) {
	s := &src.set
	cert, err := LoadKeyStore(s.KeyStore, s.key("keyStore"))
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.TrustStore.Location != "" {
		if cfg.ClientCAs, err = LoadTrustStore(s.TrustStore, s.key("trustStore")); err != nil {
			return nil, err
		}
	}
	switch s.ClientAuth {
	case "need":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "want":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.NoClientCert
	}
	if cfg.MinVersion, cfg.MaxVersion, err = s.versions(); err != nil {
		return nil, err
	}
	names, explicit := s.CipherSuites, true
	if len(names) == 0 {
		names, explicit = defaultCiphers, false
	}
	cr := mapCiphers(names)
	if cfg.MinVersion <= tls.VersionTLS12 && len(cr.ids) == 0 {
		return nil, fmt.Errorf("%w: %s: none of %s is a TLS 1.2 suite Go implements", ErrConfig, s.key("ciphersuites"), strings.Join(names, ","))
	}
	cfg.CipherSuites = cr.ids
	if s.Quorum {
		// A Raft link's receiver writes nothing after the handshake (raftnet's peek tells a
		// live link from an ended one by that); the dialler keeps no session cache anyway.
		cfg.SessionTicketsDisabled = true
	}
	if first && explicit && len(cr.unsupported) > 0 {
		src.log.Warn(s.key("ciphersuites")+": cipher suites Go does not implement are left out", "suites", strings.Join(cr.unsupported, ","))
	}
	if first && explicit && len(cr.tls13) > 0 && cfg.MaxVersion >= tls.VersionTLS13 && len(cr.tls13) < 3 {
		src.log.Warn(s.key("ciphersuites")+": Go enables every TLS 1.3 suite; the TLS 1.3 names listed do not restrict them", "listed", strings.Join(cr.tls13, ","))
	}
	return cfg, nil
}
