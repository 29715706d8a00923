# states.sh: each thread's state in every sample: "(waiting for GVL)" and "(blocked: SYSCALL)" frames over the
# stacks, --mode cpu|wall|gvl, the per-thread table of summary, state markers in the Firefox profile and
# state tracks in speedscope; on every Ruby (its shares against --blocking: accuracy.sh).
# Sourced by run (SUITE=spy, or SUITE=states alone).
gvl=$top/tests/integration/ruby/gvl.rb

between() { [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

for ver in $RUBIES; do
	if ! start_ruby "$ver" "$gvl"; then
		skipped "states: ruby $ver: cannot start it here ($(head -c 200 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	sum="$work/states-$ver.txt"
	"$RBSCOPE" record -p "$pid" -r 200 -d 3 --syscalls -f summary -o "$sum" --raw "$work/states-$ver.raw" 2>"$work/states.err"
	check "states: ruby $ver: record --syscalls exits 0 ($(tail -n 1 "$work/states.err"))" test $? = 0
	for t in cpu-a cpu-b; do
		share=$(state_share "$sum" $t 6)
		check "states: ruby $ver: $t, one of two CPU-bound threads, waits for the GVL 35-65% of its samples (${share:-none}%)" \
			between "$share" 35 65
	done
	for t in sleeper queue; do
		share=$(state_share "$sum" $t 6) idle=$(state_share "$sum" $t 8)
		check "states: ruby $ver: $t never waits for the GVL (${share:-none}%), idle >= 95% (${idle:-none}%)" \
			sh -c "[ '$share' = 0 ] && [ '${idle:-0}' -ge 95 ]"
	done
	share=$(state_share "$sum" reader 7)
	check "states: ruby $ver: the pipe reader is blocked >= 95% of its samples (${share:-none}%)" between "$share" 95 100
	"$RBSCOPE" report -i "$work/states-$ver.raw" -f summary -o "$work/states-report.txt"
	check "states: ruby $ver: report of --raw gives the same thread table" \
		cmp -s <(sed -n '/^thread /,$p' "$sum") <(sed -n '/^thread /,$p' "$work/states-report.txt")

	"$RBSCOPE" report -i "$work/states-$ver.raw" -f collapsed -o "$work/states.col"
	check "states: ruby $ver: (waiting for GVL) over the CPU threads' stacks" \
		grep -Eq 'Object#burn[^;]*;.*\(waiting for GVL\) [0-9]+$' "$work/states.col"
	check "states: ruby $ver: (blocked: SYSCALL) over IO#read ($(grep -o '(blocked[^)]*)' "$work/states.col" | sort -u | tr '\n' ' '))" \
		grep -Eq 'IO#read[^;]*;\(blocked: [a-z0-9_]+\) [0-9]+$' "$work/states.col"
	check "states: ruby $ver: no state frame over a thread asleep in a method that waits" \
		sh -c "! grep -Eq '(Kernel#sleep|Queue#pop|Thread::Queue#pop)[^;]*;\((blocked|sleeping)' '$work/states.col'"

	"$RBSCOPE" record -p "$pid" -r 200 -d 1 --mode gvl -f collapsed -o "$work/gvl.col" 2>/dev/null
	check "states: ruby $ver: --mode gvl: only GVL waits ($(awk '{s += $NF} END {print s + 0}' "$work/gvl.col") samples), all of the CPU threads" \
		sh -c "[ -s '$work/gvl.col' ] && ! grep -v '(waiting for GVL) [0-9]*$' '$work/gvl.col' | grep -q . && ! grep -q 'sleeper\|reader' '$work/gvl.col'"
	"$RBSCOPE" record -p "$pid" -r 200 -d 1 --mode cpu --threads -f collapsed -o "$work/cpu.col" 2>/dev/null
	check "states: ruby $ver: --mode cpu: the CPU threads, never a wait ($(awk '{s += $NF} END {print s + 0}' "$work/cpu.col") samples)" \
		sh -c "grep -q 'Object#burn' '$work/cpu.col' && ! grep -Eq '\((waiting|blocked|sleeping)|sleeper|queue|reader' '$work/cpu.col'"

	"$RBSCOPE" report -i "$work/states-$ver.raw" -f firefox -o "$work/states.json"
	check "states: ruby $ver: the Firefox profile has state markers per thread: cpu-a runs and waits, the sleeper never waits, the reader is blocked in the system call --syscalls named ($(grep -o '(blocked: [a-z0-9_]*)' "$work/states.col" | sort -u | tr '\n' ' '))" \
		ruby -rjson -e '
			j = JSON.parse(File.read(ARGV[0]))
			states = j["threads"].to_h { |t| [t["name"], t["markers"]["data"].map { |m| t["stringTable"][m[0]] }.uniq] }
			reader = j["threads"].find { |t| t["name"] == "reader" }["markers"]["data"].map { |m| m[5]["state"] }.uniq
			ok = j["meta"]["markerSchema"].any? { |s| s["name"] == "ThreadState" } &&
			  (states["cpu-a"] & ["running", "GVL wait"]).size == 2 && !states["sleeper"].include?("GVL wait") &&
			  states["reader"] == ["blocked"] && reader.size == 1 && reader[0] =~ /\Ablocked: [a-z0-9_]+\z/ &&
			  File.read(ARGV[1]).include?("(#{reader[0]})") &&
			  j["threads"].all? { |t| t["markers"]["data"].all? { |m| m[2] > m[1] && m[5]["type"] == "ThreadState" } }
			exit(ok ? 0 : 1)' "$work/states.json" "$work/states.col"
	"$RBSCOPE" report -i "$work/states-$ver.raw" -f speedscope -o "$work/states.speedscope.json"
	check "states: ruby $ver: speedscope has a state track per thread beside its stacks; the reader's names its system call" \
		ruby -rjson -e '
			j = JSON.parse(File.read(ARGV[0]))
			names = j["profiles"].map { |p| p["name"] }
			frames = j["shared"]["frames"]
			seen = ->(re) { t = j["profiles"].find { |p| p["name"] =~ re }; t && t["samples"].map { |s| frames[s[0]]["name"] }.uniq }
			cpu, reader = seen.(/^cpu-a .* states$/), seen.(/^reader .* states$/)
			exit(names.size == 12 && cpu && (cpu & ["(running)", "(GVL wait)"]).size == 2 &&
			     reader && reader.size == 1 && reader[0] =~ /\A\(blocked: [a-z0-9_]+\)\z/ &&
			     File.read(ARGV[1]).include?(reader[0]) ? 0 : 1)' "$work/states.speedscope.json" "$work/states.col"
	stop_ruby "$pid"
done

# A stack that read as at the sample before is named from it (a short read): it must still see every move.
# parked.rb's mover parks 100 ms in wait_a, then 100 ms in wait_b, at the same depth; "still" never moves.
for ver in $RUBIES; do
	if ! start_ruby "$ver" "$top/tests/integration/ruby/parked.rb"; then
		skipped "states: ruby $ver: parked: cannot start it here"
		continue
	fi
	"$RBSCOPE" record -p "$pid" -r 50 -d 4 --threads -f collapsed -o "$work/parked.col" 2>"$work/parked.err"
	# Parked threads are read in one system call a tick for all of them, not one each (3 threads here).
	if command -v strace >/dev/null; then
		# (again once if over: on a busy machine the main thread and the mover, slower to park, are found moving
		# at more ticks, and a moving stack is read in full: 504 where 340 is usual, once, with a build beside)
		for try in 1 2; do
			strace -f -c -e trace=process_vm_readv -o "$work/parked.s1" "$RBSCOPE" record -p "$pid" -r 50 -d 4 -f collapsed -o /dev/null 2>"$work/parked.rec"
			strace -f -c -e trace=process_vm_readv -o "$work/parked.s0" "$RBSCOPE" record -p "$pid" -r 50 -d 0.001 -f collapsed -o /dev/null 2>/dev/null
			calls=$(( $(awk '$NF == "process_vm_readv" {print $4}' "$work/parked.s1") - $(awk '$NF == "process_vm_readv" {print $4}' "$work/parked.s0") ))
			ticks=$(( $(sed -n 's/^rbscope: \([0-9]*\) samples.*/\1/p' "$work/parked.rec") / 3 ))
			[ $ticks -ge 100 ] && [ $((calls * 10)) -lt $((ticks * 25)) ] && break
		done
		check "states: ruby $ver: parked: under 2.5 process_vm_readv a tick for 3 threads (try $try; $calls in $ticks ticks)" \
			sh -c "[ $ticks -ge 100 ] && [ $((calls * 10)) -lt $((ticks * 25)) ]"
	else
		skipped "states: ruby $ver: parked: strace is not installed (process_vm_readv calls not counted)"
	fi
	stop_ruby "$pid"
	a=$(awk '/^thread mover/ && /Object#wait_a/ { s += $NF } END { print s + 0 }' "$work/parked.col")
	b=$(awk '/^thread mover/ && /Object#wait_b/ { s += $NF } END { print s + 0 }' "$work/parked.col")
	still=$(awk '/^thread still/ { s += $NF } END { print s + 0 }' "$work/parked.col")
	unchanged=$(sed -n 's/.* \([0-9]*\) stacks unchanged since the sample before$/\1/p' "$work/parked.err")
	check "states: ruby $ver: parked: most stacks read as unchanged (${unchanged:-none} of $(awk '{s += $NF} END {print s + 0}' "$work/parked.col"))" \
		sh -c "[ -n '$unchanged' ] && [ '$unchanged' -ge $((still * 3 / 2)) ]"
	check "states: ruby $ver: parked: a thread moving between two waits at one depth seen in each 35-65% ($a and $b samples)" \
		sh -c "[ $((a + b)) -ge 100 ] && [ $((a * 100)) -ge $(((a + b) * 35)) ] && [ $((a * 100)) -le $(((a + b) * 65)) ]"
done
