# lib.sh: the integration tests' helpers: TAP-style checks and starting Ruby programs (sourced by run).
# Expects $top, $work, $RBSCOPE, and the counters pass, fail, skip and the pid list pids.

# The Rubies the checks run on, one list: the host's (bookworm's 3.1), then those of Debian's other suites in
# chroots (scripts/ruby-chroot); and the statically linked 3.1 (scripts/static-ruby), with and without its symbols.
RUBIES="3.1 3.3 2.7 3.4"
RUBIES_STATIC="static static-nodebug static-stripped"
# Rubies with a JIT on: bookworm's 3.1 with --yjit, and 3.3 built from Debian's source with YJIT (scripts/yjit-ruby:
# its miniruby, the core classes only), with --yjit. RUBIES_JIT="3.4+yjit" (scripts/yjit-ruby 3.4) by hand.
RUBIES_JIT=${RUBIES_JIT:-"3.1+yjit 3.3+yjit"}
# rubies_except VER...: $RUBIES without those (a check that cannot run on them says why where it is used).
rubies_except() {
	local v out=""
	for v in $RUBIES; do
		case " $* " in *" $v "*) ;; *) out="$out $v" ;; esac
	done
	echo $out
}

ok() { pass=$((pass + 1)); echo "ok - $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $*"; }
skipped() { skip=$((skip + 1)); echo "skip - $*"; }
check() { # check NAME COMMAND...: pass when the command succeeds
	local name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# start_ruby VERSION SCRIPT [ARGS...]: start SCRIPT under that Ruby, wait for its "ready" line; sets $pid and
# $script_path. VERSION "static" is a statically linked 3.1 (scripts/static-ruby), or $static_ruby if set; "X+yjit"
# is Ruby X with YJIT on (RUBIES_JIT), with $jit_flags instead of --yjit if set ("" on 3.3+: YJIT built in, off).
start_ruby() {
	local ver=$1 script=$2 root
	shift 2
	local out="$work/ruby-$ver.out"
	if [ "$ver" = static ] || [ "${ver%+yjit}" != "$ver" ]; then
		local rb=${static_ruby:-} jit=
		case "$ver" in
		3.1+yjit) rb=ruby jit=${jit_flags---yjit} ;; # (the host's)
		*+yjit) rb=$("$top/scripts/yjit-ruby" "${ver%+yjit}" 2>"$work/chroot.err") || return 1; jit=${jit_flags---yjit} ;;
		esac
		[ -n "$rb" ] || rb=$("$top/scripts/static-ruby" 2>"$work/chroot.err") || return 1
		script_path=$script
		"$rb" $jit "$script" "$@" >"$out" 2>&1 &
		pid=$!
		pids="$pids $pid"
		await_ready "$out" $pid
		return
	fi
	root=$("$top/scripts/ruby-chroot" "$ver" 2>"$work/chroot.err") || return 1
	if [ "$root" = / ]; then
		script_path=$script
		ruby "$script" "$@" >"$out" 2>&1 &
	else
		mkdir -p "$root/tmp/rbscope-it"
		cp "$script" "$root/tmp/rbscope-it/"
		script_path=/tmp/rbscope-it/$(basename "$script")
		chroot "$root" ruby "$script_path" "$@" >"$out" 2>&1 &
	fi
	pid=$!
	pids="$pids $pid"
	await_ready "$out" $pid
}

# await_line FILE REGEX PID [TENTHS]: wait (10 s, or TENTHS of a second) for a line matching REGEX (grep -E) in FILE
# while PID lives (PID "": however long it takes, up to the limit). 0 once it is there: the handshake every check
# that starts something and then acts on it waits for, instead of a sleep.
await_line() {
	local file=$1 re=$2 p=$3
	for _ in $(seq "${4:-100}"); do
		grep -q -E "$re" "$file" 2>/dev/null && return 0
		[ -z "$p" ] || kill -0 "$p" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# await_true TENTHS COMMAND...: run COMMAND every tenth of a second until it succeeds, at most TENTHS times. 0 once it
# has: for a state a check acts on that no line announces (a probe enabled, a process listed).
await_true() {
	local n=$1
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# await_ready OUT PID [TENTHS]: wait for a "ready" line in OUT (await_line), what every Ruby program the tests start
# prints once it is set up. A "child N" line before it names a forked child: it goes into pids and ready_child.
await_ready() {
	ready_child=
	await_line "$1" '^ready' "$2" "${3:-100}" || return 1
	ready_child=$(sed -n 's/^child //p' "$1")
	[ -n "$ready_child" ] && pids="$pids $ready_child"
	return 0
}

# serve_wait PORT: wait (5 s) until something answers on PORT.
serve_wait() {
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
	done
	return 1
}

# state_share FILE THREAD FIELD: a thread's share (%) in one column of summary's thread table, whose rows read
# "NAME (tid N) SAMPLES RUNNING GVL-WAIT BLOCKED IDLE GC": field 6 GVL wait, 7 blocked, 8 idle; rounded to an
# integer, empty if the thread is not in it.
state_share() {
	awk -v t="$2" -v c="$3" '$1 == t && $2 == "(tid" { v = $c; sub(/%/, "", v); printf "%d\n", v + 0.5 }' "$1"
}

stop_ruby() { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# self_gap REF OTHER [FUNCTION]: two summaries' (record -f summary) largest gap in a function's self share, over the
# functions of either (one missing from a file has 0% there), in pp; then FUNCTION's share in REF and in OTHER (a share
# missing reads 0 in REF, 99 in OTHER: either fails a check of it); then the function with that gap (its place cut).
self_gap() {
	awk -v fn="${3:-}" 'FNR == 1 { f++ } FNR > 1 && $1 ~ /%$/ { v = $1; sub("%", "", v); k = $0
		sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", k); s[f, k] = v; n[k] = 1; if ($5 == fn) a[f] = v }
		END { for (k in n) { g = s[1, k] - s[2, k]; if (g < 0) g = -g; if (g >= m) { m = g; w = k } }
			sub(/ \((\([^()]*\)[^()]*|[^()]*)\)$/, "", w)
			printf "%.2f %s %s %s", m, (1 in a) ? a[1] : 0, (2 in a) ? a[2] : 99, w }' "$1" "$2"
}

# cpu_ns PID TID: the CPU time thread TID of PID has run, in ns (the kernel's schedstat), 0 if it is gone.
cpu_ns() { awk '{ print $1 }' "/proc/$1/task/$2/schedstat" 2>/dev/null || echo 0; }

# on_cpu_share COLLAPSED REGEX CPU_BEFORE CPU_AFTER RATE: the samples of the stacks matching REGEX in a --on-cpu
# recording, as a % of those the thread's CPU time between the two reads (cpu_ns, taken around the recording, its
# attach included) stands for at RATE; then that CPU time in ms. A busy machine gives the thread less CPU time and
# the recording fewer samples: the share stays (100% less what attaching took).
on_cpu_share() {
	awk -v re="$2" -v d=$(($4 - $3)) -v r="$5" '$0 ~ re { s += $NF }
		END { e = d / 1e9 * r; printf "%d %d\n", (e > 0 ? 100 * s / e : 0), d / 1e6 }' "$1"
}

line_of() { grep -n "$1" "$2" | head -n 1 | cut -d: -f1; }


# bpftrace_for SECS ARGS...: run bpftrace for SECS seconds (less if its script exits), then end it with SIGINT so it
# prints its maps, sent again every half second: a SIGINT that arrives while bpftrace sets up can be taken and
# never acted on while it waits for events (seen once in a CI run: it waited forever). Killed after 10 s more.
bpftrace_for() {
	local secs=$1 b i=0
	shift
	bpftrace "$@" &
	b=$!
	while kill -0 $b 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	for _ in $(seq 20); do
		kill -0 $b 2>/dev/null || break
		kill -INT $b 2>/dev/null
		sleep 0.5
	done
	kill -9 $b 2>/dev/null
	wait $b
}

# The kernel's own account of each thread's CPU time, the reference for --mode cpu (states.sh, apps.sh).
# cpu_times PID: "TID TICKS" per thread.
cpu_times() {
	for st in /proc/"$1"/task/*/stat; do
		awk '{ sub(/^.*\) /, ""); print FILENAME, $12 + $13 }' "$st" 2>/dev/null
	done | sed 's|^/proc/[0-9]*/task/\([0-9]*\)/stat|\1|'
}
# cpu_share_gap SUMMARY BEFORE AFTER: the largest gap (pp) between a thread's share of the summary's samples and
# its share of the CPU time between the two cpu_times readings; "none" without samples.
cpu_share_gap() {
	awk 'FILENAME == ARGV[1] && match($0, /\(tid [0-9]+\) +[0-9]+ /) {
			split(substr($0, RSTART + 5, RLENGTH - 5), f, /[) ]+/); s[f[1]] = f[2]; total += f[2]; next
		}
		FILENAME == ARGV[1] { next }
		FILENAME == ARGV[2] { c0[$1] = $2; next }
		FILENAME == ARGV[3] { d[$1] = $2 - c0[$1]; cpu += d[$1] }
		END {
			if (!total || !cpu) { print "none"; exit }
			for (t in d) { g = 100 * s[t] / total - 100 * d[t] / cpu; if (g < 0) g = -g; if (g > max) max = g }
			for (t in s) if (!(t in d)) max = 100
			printf "%.1f\n", max
		}' "$1" "$2" "$3"
}
