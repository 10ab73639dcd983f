# Sourced by ./mvnw and bin/* launchers: points JAVA_HOME at a JDK 25 or newer.
# Order: $JAVA_HOME if it is already >= 25, then `java` on PATH, then the usual JVM directories.
# Fails with a clear message when no JDK 25 exists on this machine.

s3stream_java_feature() { # prints the feature release of the JDK at $1 (e.g. 25), or nothing
  [ -x "$1/bin/javac" ] || return 0
  "$1/bin/java" -XshowSettings:properties -version 2>&1 \
    | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n 1
}

s3stream_find_java25() {
  if [ -n "${JAVA_HOME-}" ]; then
    v="$(s3stream_java_feature "$JAVA_HOME")"
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then return 0; fi
  fi
  case "$-" in *f*) s3stream_noglob=1; set +f ;; *) s3stream_noglob=0 ;; esac
  for candidate in \
      "$(dirname "$(dirname "$(readlink -f "$(command -v javac 2>/dev/null || echo /nonexistent)")")")" \
      /usr/lib/jvm/* /usr/local/lib/jvm/* /opt/java/* /opt/jdk* "$HOME"/.sdkman/candidates/java/* \
      /Library/Java/JavaVirtualMachines/*/Contents/Home; do
    [ -d "$candidate" ] || continue
    v="$(s3stream_java_feature "$candidate")"
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then
      JAVA_HOME="$candidate"
      export JAVA_HOME
      [ "$s3stream_noglob" = 1 ] && set -f
      return 0
    fi
  done
  [ "$s3stream_noglob" = 1 ] && set -f
  echo "s3stream needs a JDK 25 or newer, and none was found." >&2
  echo "Looked at JAVA_HOME (${JAVA_HOME:-unset}), javac on PATH, /usr/lib/jvm/*, /opt/java/*, ~/.sdkman." >&2
  echo "Install one (for example the Temurin 25 JDK) or set JAVA_HOME to it." >&2
  return 1
}

s3stream_find_java25 || exit 1
