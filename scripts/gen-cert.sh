#!/bin/sh
# gen-cert.sh DIR: a self-signed certificate and key for 127.0.0.1 and
# localhost, valid 30 days, as DIR/cert.pem and DIR/key.pem (default DIR:
# the current directory). For -tls-cert/-tls-key in tests and local runs;
# clients must trust DIR/cert.pem or skip verification.
set -eu
dir=${1:-.}
mkdir -p "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=knowngood test" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
echo "$dir/cert.pem $dir/key.pem"
