package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/testcerts"
)

// TestUnifiedListener: one port answers HTTP and HTTPS (the handler sees Request.TLS only on
// the second); a connection that sends nothing is closed after the detection timeout with a
// log line; one closed at once is closed quietly; Close waits for every goroutine.
func TestUnifiedListener(t *testing.T) {
	ca := testcerts.NewCA(t, t.TempDir(), "ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "server"}, nil)
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key}}}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	l := NewUnifiedListener(raw, cfg, 300*time.Millisecond, "admin port", slog.New(slog.NewTextHandler(logs, nil)))
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls=%v", r.TLS != nil)
	}), ErrorLog: slog.NewLogLogger(slog.NewTextHandler(logs, nil), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	addr := l.Addr().String()

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for i, tc := range []struct {
		url    string
		client *http.Client
		want   string
	}{
		0: {"http://" + addr + "/", &http.Client{Timeout: 5 * time.Second}, "tls=false"},
		1: {"https://" + addr + "/", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}, "tls=true"},
		2: {"http://" + addr + "/again", &http.Client{Timeout: 5 * time.Second}, "tls=false"},
	} {
		resp, err := tc.client.Get(tc.url)
		if err != nil {
			t.Fatalf("%d: %s: %v", i, tc.url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tc.want {
			t.Errorf("%d: %s: %q, want %q", i, tc.url, b, tc.want)
		}
	}
	// An HTTPS client that does not trust the certificate fails its handshake, as on an
	// HTTPS-only port.
	if _, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}).Get("https://" + addr + "/"); err == nil {
		t.Error("an untrusted certificate was accepted by the client")
	}

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a silent connection: read %v, want EOF (closed by the listener)", err)
	}
	if !strings.Contains(logs.String(), "admin port: nothing received within the detection timeout, closing") {
		t.Errorf("no log line for the silent connection:\n%s", logs.String())
	}
	quick, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	quick.Close()

	hs.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
}
