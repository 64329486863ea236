package sasl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// jaasText is the JAAS file both servers are configured from; the Client sections are what
// the Java client logs in with (one file per user, section "Client").
const jaasText = `/* server users (DigestLoginModule) */
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_bob="bobsecret"
       user_alice="alicesecret";
};
`

func clientJAAS(user, pass string) string {
	return fmt.Sprintf("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=%q\n  password=%q;\n};\n", user, pass)
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
