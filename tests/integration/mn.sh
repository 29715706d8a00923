# mn.sh: Ruby threads that are not one native thread each. M:N threads (Ruby 3.3+ with RUBY_MN_THREADS=1, several
# Ruby threads on fewer native threads): each is one thread in every output, whichever native thread it runs on, if
# any, never "tid 0". Ractors (3.0+): every Ractor's threads, each labelled with its Ractor, holding its own GVL.
# Sourced by run (the spy suite, or `mn` alone).

for ver in $(rubies_except 2.7 3.1); do
	if ! RUBY_MN_THREADS=1 start_ruby "$ver" "$top/tests/integration/ruby/mn.rb"; then
		skipped "mn: ruby $ver: cannot start the program"
		continue
	fi
	"$RBSCOPE" snapshot -p "$pid" >"$work/mn-snap.txt" 2>&1
	# each thread's line says M:N, and its frames hold its own method
	got=$(awk '/^Thread/ { t = $3; gsub(/"/, "", t); if ($0 ~ / M:N /) mn[t] = 1; if ($0 ~ /tid=0 /) zero++ }
		/^    / { f[t] = f[t] " " $1 }
		END { printf "%s%s%s%s%s", (mn["a"] && f["a"] ~ /Object#spin_a/) ? "a " : "", (mn["b"] && f["b"] ~ /Object#spin_b/) ? "b " : "",
			(mn["nap"] && f["nap"] ~ /Kernel#sleep/ && f["nap"] ~ /Object#nap/) ? "nap " : "",
			(mn["wait"] && f["wait"] ~ /Thread::Queue#pop/ && f["wait"] ~ /Object#wait/) ? "wait " : "", zero ? "tid=0" : "" }' "$work/mn-snap.txt")
	check "mn: ruby $ver: snapshot shows each M:N thread with its own stack, none as tid 0 (as expected: ${got:-none})" \
		test "$got" = "a b nap wait "
	# --mode cpu: an M:N thread's native thread runs others too, so its time is its ticks holding the GVL: the two
	# busy threads share one GVL, half each (300 ticks: within 15 pp), the sleeping and waiting ones none.
	"$RBSCOPE" record -p "$pid" -r 100 -d 3 --mode cpu -f summary -o "$work/mn-cpu.txt" 2>/dev/null
	cpu=$(awk '$2 == "(M:N" { s[$1] = $5 } END { t = s["a"] + s["b"]
		printf "a %d%% b %d%%, nap %d, wait %d", t ? 100 * s["a"] / t : 0, t ? 100 * s["b"] / t : 0, s["nap"], s["wait"] }' "$work/mn-cpu.txt")
	check "mn: ruby $ver: --mode cpu: the busy M:N threads half each of the time holding the GVL, the others none ($cpu)" \
		sh -c "echo '$cpu' | awk '{ a = \$2 + 0; b = \$4 + 0; exit !(a >= 35 && a <= 65 && b >= 35 && b <= 65 && \$6 == \"0,\" && \$8 == \"0\") }'"
	# 6 s at 100 Hz, from outside and --blocking at once
	"$RBSCOPE" record -p "$pid" -r 100 -d 6 --blocking -f summary -o "$work/mn-b.txt" 2>/dev/null &
	bp=$!
	"$RBSCOPE" record -p "$pid" -r 100 -d 6 --raw "$work/mn.raw" -f summary -o "$work/mn-d.txt" 2>/dev/null
	wait $bp
	stop_ruby "$pid"
	rows=$(awk '$2 == "(M:N" || $2 == "(tid" { printf "%s%s ", $1, ($2 == "(M:N" ? "*" : "") }' "$work/mn-d.txt")
	check "mn: ruby $ver: record's thread table has one row per Ruby thread, the M:N ones as such ($rows)" \
		sh -c "echo '$rows' | tr ' ' '\n' | sort | tr '\n' ' ' | grep -qx ' a\* b\* main nap\* wait\* '"
	# each thread's states within 5 pp of --blocking's (600 ticks: a busy thread's 50% share spreads by 2 pp)
	gap=$(awk 'FNR == 1 { f++ } ($2 == "(M:N" || $2 == "(tid") { o = $2 == "(M:N" ? 6 : 5
		for (i = 0; i < 5; i++) { v = $(o + i); sub("%", "", v); s[f, $1, i] = v; n[$1] = 1 } }
		END { for (k in n) for (i = 0; i < 5; i++) { g = s[1, k, i] - s[2, k, i]; if (g < 0) g = -g; if (g > m) { m = g; w = k } }
			printf "%.1f %s", m, w }' "$work/mn-b.txt" "$work/mn-d.txt")
	check "mn: ruby $ver: each M:N thread's states within 5 pp of --blocking's (largest gap: $gap)" \
		awk -v g="${gap%% *}" 'BEGIN { exit !(g != "" && g + 0 <= 5) }'
	# the same threads in the formats that keep one track per thread
	"$RBSCOPE" report -i "$work/mn.raw" -f speedscope -o "$work/mn.speedscope.json" 2>/dev/null
	"$RBSCOPE" report -i "$work/mn.raw" -f firefox -o "$work/mn.gecko.json" 2>/dev/null
	tracks=$(ruby -rjson -e 'ss = JSON.parse(File.read(ARGV[0]))["profiles"].map { |p| p["name"] }.reject { |n| n.end_with?(" states") }
		ff = JSON.parse(File.read(ARGV[1]))["threads"].map { |t| [t["name"], t["tid"]] }
		puts [ss.sort.join(","), ff.map(&:first).sort.join(","), ff.map(&:last).uniq.size].join(" | ")' \
		"$work/mn.speedscope.json" "$work/mn.gecko.json" 2>&1)
	check "mn: ruby $ver: speedscope and Firefox keep one track per Ruby thread ($tracks)" \
		sh -c "echo '$tracks' | grep -Eq '^a \(M:N thread [0-9]+\),b \(M:N thread [0-9]+\),main \(tid [0-9]+\),nap \(M:N thread [0-9]+\),wait \(M:N thread [0-9]+\) \| a,b,main,nap,wait \| 5$'"
done

# Three busy Ractors beside the main one's thread waiting in Ractor#take: each seen with its own method, running
# (each Ractor has a GVL of its own) in the thread table, labelled with its Ractor; --blocking reads the same.
for ver in $(rubies_except 2.7); do
	if ! start_ruby "$ver" "$top/tests/integration/ruby/ractors.rb"; then
		skipped "ractors: ruby $ver: cannot start the program"
		continue
	fi
	"$RBSCOPE" snapshot -p "$pid" >"$work/ra-snap.txt" 2>&1
	got=$(awk '/^Thread/ { t = ""; if (match($0, /\(Ractor [0-9]+( "[^"]*")?\)/)) t = substr($0, RSTART, RLENGTH) }
		/^    Object#work_[abc] / && t { m[$1] = t } /^    Ractor#take / { take = 1 }
		END { printf "%s|%s|%s|%s", m["Object#work_a"], m["Object#work_b"], m["Object#work_c"], take ? "take" : "" }' "$work/ra-snap.txt")
	check "ractors: ruby $ver: snapshot shows each Ractor's thread with its own method, labelled with its Ractor ($got)" \
		sh -c "echo '$got' | grep -Eq '^\(Ractor [0-9]+ \"calc\"\)\|\(Ractor [0-9]+\)\|\(Ractor [0-9]+\)\|take$'"
	"$RBSCOPE" record -p "$pid" -r 100 -d 4 --blocking -f summary -o "$work/ra-b.txt" 2>/dev/null &
	bp=$!
	"$RBSCOPE" record -p "$pid" -r 100 -d 4 -f summary -o "$work/ra-d.txt" 2>/dev/null
	wait $bp
	stop_ruby "$pid"
	for f in d b; do
		what=record
		[ $f = b ] && what="record --blocking"
		rows=$(awk '$1 == "Ractor" { v = $0; sub(/.*\) +[0-9]+ +/, "", v); split(v, c, " "); sub("%", "", c[1]); printf "%s%s:%s ", $2, ($3 == "calc" ? "calc" : ""), c[1] }' "$work/ra-$f.txt")
		shares=$(awk '$5 ~ /^Object#work_[abc]$/ { sub("%", "", $2); printf "%s:%s ", $5, $2 }' "$work/ra-$f.txt")
		check "$what: ruby $ver: three Ractors' threads, each running on its Ractor's GVL (>= 95%: $rows), each method a quarter of the samples within 3 pp ($shares)" \
			sh -c "echo '$rows' | awk '{ for (i = 1; i <= NF; i++) { split(\$i, a, \":\"); if (a[2] + 0 >= 95) ok++; if (a[1] ~ /calc/) calc++ } exit !(NF == 3 && ok == 3 && calc == 1) }' &&
				echo '$shares' | awk '{ for (i = 1; i <= NF; i++) { split(\$i, a, \":\"); d = a[2] - 25; if (d * d <= 9) ok++ } exit !(NF == 3 && ok == 3) }'"
	done
done
