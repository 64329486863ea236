#!/usr/bin/env bash
# Installs what Corral's tests need from Debian: Apache ZooKeeper 3.8 (the
# differential-test oracle and benchmark baseline) with the netty jars its secure
# client port needs (tests/tls), its C client, kazoo with
# pure-sasl (kazoo's SASL DIGEST-MD5, tests/sasl), an MIT Kerberos KDC with its admin
# and client tools and python3-kerberos (pure-sasl's GSSAPI) for tests/kerberos, and
# iptables (the fault tests cut servers off from each other on loopback), and
# prometheus for its promtool (deploy/'s tests check the alert rules with it;
# installed without its recommended node exporter; its service is not started
# where there is no init system).
# Idempotent: packages already installed are left alone, and `apt-get update`
# runs only when something has to be installed. Non-interactive; run as root
# (or with sudo available).
set -euo pipefail

PACKAGES=(zookeeper zookeeper-bin libnetty-java python3-kazoo python3-pure-sasl krb5-kdc krb5-admin-server krb5-user python3-kerberos iptables prometheus)
# Installed without their recommended packages.
LEAN=(prometheus krb5-kdc krb5-admin-server krb5-user)

export DEBIAN_FRONTEND=noninteractive

installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}

missing=()
for p in "${PACKAGES[@]}"; do
	if installed "$p"; then
		echo "install-deps: $p already installed ($(dpkg-query -W -f='${Version}' "$p"))"
	else
		missing+=("$p")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: nothing to do"
	exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo -n)
	else
		echo "install-deps: need root to install ${missing[*]}" >&2
		exit 1
	fi
fi

echo "install-deps: installing ${missing[*]}"
full=()
lean=()
for p in "${missing[@]}"; do
	if [[ " ${LEAN[*]} " == *" $p "* ]]; then lean+=("$p"); else full+=("$p"); fi
done
"${SUDO[@]}" apt-get update -q
if [ "${#full[@]}" -gt 0 ]; then
	"${SUDO[@]}" apt-get install -y -q \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${full[@]}"
fi
if [ "${#lean[@]}" -gt 0 ]; then
	"${SUDO[@]}" apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${lean[@]}"
fi

for p in "${missing[@]}"; do
	if ! installed "$p"; then
		echo "install-deps: $p failed to install" >&2
		exit 1
	fi
	echo "install-deps: installed $p ($(dpkg-query -W -f='${Version}' "$p"))"
done
