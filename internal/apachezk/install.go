package apachezk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Paths of the Debian packaging (zookeeper / libzookeeper-java 3.8).
const (
	// ZooKeeperJar is the server jar. Its manifest Class-Path lists the
	// runtime dependencies (zookeeper-jute, netty, jetty, jackson,
	// slf4j-api, ...), so the JVM finds them without further help.
	ZooKeeperJar = "/usr/share/java/zookeeper.jar"
	// CLIPath is zkCli.sh from the Debian package.
	CLIPath = "/usr/share/zookeeper/bin/zkCli.sh"
	// MainClass starts a standalone server or a quorum peer, depending on
	// zoo.cfg.
	MainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	// InstallHint tells a human what to run when something is missing.
	InstallHint = "run scripts/install-deps.sh (Debian packages zookeeper, zookeeper-bin, python3-kazoo)"
)

// requiredJars must exist for a server to start. The first is the server
// itself; jute is its first manifest dependency and stands for the rest of
// libzookeeper-java's dependencies.
var requiredJars = []string{
	ZooKeeperJar,
	"/usr/share/java/zookeeper-jute.jar",
}

// loggingJars bind slf4j (used by ZooKeeper) to log4j 1.2, configured by the
// log4j.properties written into each server directory. Both come with
// libzookeeper-java's dependencies (libslf4j-java, liblog4j1.2-java). zkCli.sh
// in the Debian package leaves them out, which is why it prints "SLF4J: Failed
// to load class" noise.
var loggingJars = []string{
	"/usr/share/java/slf4j-log4j12.jar",
	"/usr/share/java/log4j-1.2.jar",
}

// Sentinel errors of this package.
var (
	// ErrNotInstalled means the Debian package is not installed.
	ErrNotInstalled = errors.New("apachezk: Apache ZooKeeper is not installed")
	// ErrNoJava means no java executable was found.
	ErrNoJava = errors.New("apachezk: no java executable")
	// ErrNotRunning is returned for operations on a server that is stopped.
	ErrNotRunning = errors.New("apachezk: server is not running")
	// ErrNotReady is returned when the ensemble did not become ready in time.
	ErrNotReady = errors.New("apachezk: ensemble not ready")
	// errPortInUse marks a start that failed because a port was taken
	// between allocation and bind; Start retries it.
	errPortInUse = errors.New("apachezk: port already in use")
)

// Available reports whether Apache ZooKeeper can be run on this machine. The
// error says what is missing and how to install it. Tests call it first and
// fail (not skip) on error: in CI the packages are installed.
func Available() error {
	var missing []string
	for _, j := range append(append([]string{}, requiredJars...), loggingJars...) {
		if _, err := os.Stat(j); err != nil {
			missing = append(missing, j)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s; %s", ErrNotInstalled, strings.Join(missing, ", "), InstallHint)
	}
	if _, err := Java(); err != nil {
		return err
	}
	return nil
}

// Java returns the java executable: $JAVA_HOME/bin/java when set, else java
// on PATH, else /usr/bin/java.
func Java() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	if isExecutable("/usr/bin/java") {
		return "/usr/bin/java", nil
	}
	return "", fmt.Errorf("%w: set JAVA_HOME or install default-jre-headless; %s", ErrNoJava, InstallHint)
}

// Classpath returns the classpath QuorumPeerMain needs, with confDir (which
// holds log4j.properties) first. zookeeper.jar brings its dependencies
// through its manifest; the logging binding is added explicitly.
func Classpath(confDir string) string {
	parts := []string{}
	if confDir != "" {
		parts = append(parts, confDir)
	}
	parts = append(parts, ZooKeeperJar)
	parts = append(parts, loggingJars...)
	return strings.Join(parts, string(os.PathListSeparator))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
