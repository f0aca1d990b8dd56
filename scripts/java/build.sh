#!/usr/bin/env bash
# Compiles the Java servers of the frameworks experiment (NettyEcho on
# Debian's libnetty-java, TomcatEcho on libtomcat10-java) with javac into
# scripts/java/build/, each only when its source is newer than its class,
# and writes beside each class the java command's arguments (its class
# path of Debian's jars and its main class) as a java @argfile, so that
# one line runs it from anywhere:
#
#   scripts/java/build.sh
#   java @scripts/java/build/NettyEcho.args 0
#   java @scripts/java/build/TomcatEcho.args 0
#
# make deps runs it after installing the packages; the frameworks package
# (scripts/internal/frameworks) runs it before it starts a Java server. A
# jar that is missing stops it (exit 1) with the package to install.
set -euo pipefail
cd "$(dirname "$0")"

jars=/usr/share/java
netty_jars=(netty-common netty-buffer netty-resolver netty-transport netty-codec netty-codec-http netty-handler)
tomcat_jars=(tomcat10-catalina tomcat10-coyote tomcat10-util tomcat10-util-scan tomcat10-juli tomcat10-api
	tomcat10-servlet-api tomcat10-jaspic-api tomcat10-annotations-api tomcat10-websocket tomcat10-websocket-api
	tomcat10-websocket-client-api)

if ! command -v javac >/dev/null; then
	echo "build.sh: javac is missing: install openjdk-17-jdk-headless (make deps)" >&2
	exit 1
fi

# build CLASS PACKAGE JAR...: compile CLASS.java against the jars (from
# the Debian package PACKAGE) if it is newer than its class, and write
# build/CLASS.args.
build() {
	local class=$1 pkg=$2 cp=
	shift 2
	for j in "$@"; do
		if [ ! -f "$jars/$j.jar" ]; then
			echo "build.sh: $jars/$j.jar is missing: install $pkg (make deps)" >&2
			exit 1
		fi
		cp=$cp${cp:+:}$jars/$j.jar
	done
	mkdir -p build
	if [ ! -f "build/$class.class" ] || [ "$class.java" -nt "build/$class.class" ]; then
		echo "build.sh: javac $class.java" >&2
		javac -d build -cp "$cp" "$class.java"
	fi
	# A new file moved into place: a java starting meanwhile reads the old
	# one or the new one, whole.
	printf -- '-cp\n"%s"\n%s\n' "$PWD/build:$cp" "$class" >"build/$class.args.tmp"
	mv "build/$class.args.tmp" "build/$class.args"
}

build NettyEcho libnetty-java "${netty_jars[@]}"
build TomcatEcho libtomcat10-java "${tomcat_jars[@]}"
