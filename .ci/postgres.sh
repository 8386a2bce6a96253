# shellcheck shell=bash
# Sourced by .ci/run: makes sure a PostgreSQL server answers and exports
# TOOLGATE_TEST_POSTGRES_URL for the storage/postgres tests, which fail
# rather than skip when CI=true.
#
#   source .ci/postgres.sh || exit 1
#   trap toolgate_pg_stop EXIT
#
# In order of preference:
#   1. TOOLGATE_TEST_POSTGRES_URL, when it is already set and answers;
#   2. the machine's server on 127.0.0.1:5432 (trust auth, user postgres),
#      with database "test" created when missing;
#   3. a throwaway cluster: PostgreSQL installed from Debian's packages when
#      absent, initdb in a temporary directory, trust auth, a free port on
#      127.0.0.1. toolgate_pg_stop stops it and removes its directory.
#
# TOOLGATE_PG_PROBE_PORT changes the port probed in step 2 (default 5432),
# which is how the fallback is exercised on a machine that has a server:
#   TOOLGATE_PG_PROBE_PORT=1 bash -c 'source .ci/postgres.sh && toolgate_pg_stop'
#
# Being sourced, it changes no shell options and never calls exit: every
# failure is a message on stderr and a non-zero return.

# toolgate_pg_stop stops the throwaway cluster this script started, if any,
# and removes its directory. Safe to call more than once, or when step 1 or
# 2 was used.
toolgate_pg_stop() {
	if [ -z "${TOOLGATE_PG_DATADIR:-}" ]; then
		return 0
	fi
	if [ -f "$TOOLGATE_PG_DATADIR/data/postmaster.pid" ]; then
		_toolgate_pg_as_owner "$TOOLGATE_PG_BINDIR/pg_ctl" -D "$TOOLGATE_PG_DATADIR/data" -m fast -w stop >/dev/null 2>&1 ||
			echo "postgres.sh: could not stop the cluster in $TOOLGATE_PG_DATADIR" >&2
	fi
	rm -rf "$TOOLGATE_PG_DATADIR"
	unset TOOLGATE_PG_DATADIR TOOLGATE_PG_BINDIR
}

# _toolgate_pg_as_owner runs a command as the cluster's owner: initdb and
# postgres refuse to run as root.
_toolgate_pg_as_owner() {
	if [ "$(id -u)" -ne 0 ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	else
		su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
	fi
}

# _toolgate_pg_answers URL: true when the server at URL accepts a query
# (or, without psql, a connection).
_toolgate_pg_answers() {
	if command -v psql >/dev/null 2>&1; then
		PGCONNECT_TIMEOUT=5 psql "$1" -XAtqc 'SELECT 1' >/dev/null 2>&1
	elif command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 5 -d "$1"
	else
		return 1
	fi
}

# _toolgate_pg_port_busy PORT: true when something listens on 127.0.0.1:PORT.
_toolgate_pg_port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _toolgate_pg_bindir prints the newest installed server's bin directory.
_toolgate_pg_bindir() {
	local d
	d=$(printf "%s\n" /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
		return 0
	fi
	return 1
}

# _toolgate_pg_ensure_db HOSTPORTARGS...: creates database "test" unless it exists.
_toolgate_pg_ensure_db() {
	local exists
	exists=$(PGCONNECT_TIMEOUT=5 psql "$@" -U postgres -d postgres -XAtqc "SELECT 1 FROM pg_database WHERE datname = 'test'") || return 1
	if [ "$exists" != "1" ]; then
		psql "$@" -U postgres -d postgres -Xqc 'CREATE DATABASE test' >/dev/null || return 1
	fi
}

# _toolgate_pg_throwaway installs PostgreSQL if needed and starts a private
# cluster on a free port.
_toolgate_pg_throwaway() {
	local bindir dir port
	if ! bindir=$(_toolgate_pg_bindir); then
		echo "postgres.sh: installing PostgreSQL from Debian's packages" >&2
		if [ "$(id -u)" -ne 0 ]; then
			echo "postgres.sh: no PostgreSQL installed and not root: cannot apt-get install postgresql" >&2
			return 1
		fi
		# Quiet: its output would bury the test results in the CI log.
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/tmp/toolgate-apt-postgresql.log 2>&1; then
			echo "postgres.sh: apt-get install postgresql failed; see /tmp/toolgate-apt-postgresql.log" >&2
			tail -n 20 /tmp/toolgate-apt-postgresql.log >&2
			return 1
		fi
		bindir=$(_toolgate_pg_bindir) || {
			echo "postgres.sh: postgresql installed but no initdb under /usr/lib/postgresql/*/bin" >&2
			return 1
		}
	fi

	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres || return 1
	fi

	port=55432
	while _toolgate_pg_port_busy "$port"; do
		port=$((port + 1))
		if [ "$port" -gt 55532 ]; then
			echo "postgres.sh: no free port in 55432-55532" >&2
			return 1
		fi
	done

	dir=$(mktemp -d /tmp/toolgate-pg.XXXXXX) || return 1
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$dir" || return 1
	fi
	TOOLGATE_PG_DATADIR=$dir
	TOOLGATE_PG_BINDIR=$bindir

	# --no-sync and fsync=off: the cluster lives for one test run, so
	# durability is worth nothing and costs seconds.
	if ! _toolgate_pg_as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1; then
		echo "postgres.sh: initdb failed:" >&2
		cat "$dir/initdb.log" >&2
		toolgate_pg_stop
		return 1
	fi
	# The socket goes in the cluster's own directory: the default one may
	# not exist, or belong to another server.
	if ! _toolgate_pg_as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null 2>&1; then
		echo "postgres.sh: the throwaway server did not start:" >&2
		cat "$dir/server.log" >&2
		toolgate_pg_stop
		return 1
	fi
	if ! _toolgate_pg_ensure_db -h 127.0.0.1 -p "$port"; then
		echo "postgres.sh: could not create database test on the throwaway server" >&2
		toolgate_pg_stop
		return 1
	fi
	TOOLGATE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
}

_toolgate_pg_setup() {
	local port=${TOOLGATE_PG_PROBE_PORT:-5432}

	if [ -n "${TOOLGATE_TEST_POSTGRES_URL:-}" ] && _toolgate_pg_answers "$TOOLGATE_TEST_POSTGRES_URL"; then
		echo "postgres.sh: using PostgreSQL from TOOLGATE_TEST_POSTGRES_URL"
		export TOOLGATE_TEST_POSTGRES_URL
		return 0
	fi
	if [ -n "${TOOLGATE_TEST_POSTGRES_URL:-}" ]; then
		echo "postgres.sh: TOOLGATE_TEST_POSTGRES_URL is set but does not answer; looking for another server" >&2
	fi

	if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -t 5 -h 127.0.0.1 -p "$port" &&
		_toolgate_pg_ensure_db -h 127.0.0.1 -p "$port"; then
		TOOLGATE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
		if _toolgate_pg_answers "$TOOLGATE_TEST_POSTGRES_URL"; then
			echo "postgres.sh: using the local PostgreSQL server at $TOOLGATE_TEST_POSTGRES_URL"
			export TOOLGATE_TEST_POSTGRES_URL
			return 0
		fi
	fi

	_toolgate_pg_throwaway || return 1
	if ! _toolgate_pg_answers "$TOOLGATE_TEST_POSTGRES_URL"; then
		echo "postgres.sh: the throwaway server does not answer at $TOOLGATE_TEST_POSTGRES_URL" >&2
		toolgate_pg_stop
		return 1
	fi
	echo "postgres.sh: using a throwaway PostgreSQL cluster at $TOOLGATE_TEST_POSTGRES_URL (data in $TOOLGATE_PG_DATADIR)"
	export TOOLGATE_TEST_POSTGRES_URL
}

_toolgate_pg_setup
