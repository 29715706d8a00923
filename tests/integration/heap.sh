# heap.sh: `rbscope heap` on dumps written by real Ruby 3.1, 3.3, 2.7 and 3.4 (sourced by run).
# Each summary must equal what Ruby's own JSON parser makes of the same dump (heap-truth.rb).
canon() { # rbscope's --json groups as sorted "key<TAB>objects<TAB>memsize" lines, equal labels summed
	ruby -rjson -e 'h = Hash.new { |x, k| x[k] = [0, 0] }
		JSON.parse(STDIN.read)["groups"].each { |g| h[g["key"]][0] += g["objects"]; h[g["key"]][1] += g["memsize"] }
		h.map { |k, (n, m)| "#{k}\t#{n}\t#{m}" }.sort.each { |l| puts l }'
}
hd=$top/tests/integration/ruby/heapdump.rb
for ver in $RUBIES; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap: ruby $ver: no Ruby here"; continue; }
	dump=$work/heap-$ver.json
	if [ "$root" = / ]; then
		ruby "$hd" "$dump"
	else
		mkdir -p "$root/tmp/rbscope-it" && cp "$hd" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/heapdump.rb /tmp/rbscope-it/heap.json && mv "$root/tmp/rbscope-it/heap.json" "$dump"
	fi
	if [ ! -s "$dump" ]; then
		not_ok "heap: ruby $ver: could not write a dump"
		continue
	fi
	for by in type class location file generation; do
		ruby "$top/tests/integration/ruby/heap-truth.rb" "$dump" $by >"$work/truth-$by"
		"$RBSCOPE" heap summary "$dump" --by $by --top 0 --json | canon >"$work/got-$by"
		check "heap: ruby $ver: summary --by $by equals Ruby's own reading of the dump ($(wc -l <"$work/truth-$by") groups)" \
			cmp -s "$work/truth-$by" "$work/got-$by"
	done
	"$RBSCOPE" heap summary "$dump" --by class --top 0 >"$work/classes-$ver.txt"
	# (2.7's dumps name a singleton class after its real class, "Class", and do not mark it: 3.0 on)
	[ "$ver" != 2.7 ] && check "heap: ruby $ver: summary --by class names classes a dump does not as Ruby does (#<Class:Planted>, #<Class:0x...>), each its own row ($(grep -c '#<Class:' "$work/classes-$ver.txt") such rows)" \
		sh -c "grep -q '  #<Class:Planted>\$' '$work/classes-$ver.txt' && grep -q '  #<Class:0x0000[0-9a-f]*>\$' '$work/classes-$ver.txt' &&
			grep -q '  #<Class:#<Object>> (singleton class 0x' '$work/classes-$ver.txt' &&
			test -z \"\$(tail -n +4 '$work/classes-$ver.txt' | sed 's/^ *[0-9]* *[0-9.]*% *[0-9]* *[0-9.]*%  //' | sort | uniq -d)\""
	check "heap: ruby $ver: the 1234 planted objects found by class and by allocation line" \
		awk -F'\t' -v line="heapdump.rb:$(line_of '# PLANTED' "$hd")" '$1 == "Planted" && $2 >= 1234 { c = 1 } substr($1, length($1) - length(line) + 1) == line && $2 >= 1234 { l = 1 }
			END { exit !(c && l) }' "$work/got-class" "$work/got-location"
done

# The census from outside (heap summary -p, --core): every type's count, the slots and the free ones equal the
# process's own ObjectSpace.count_objects, and its own classes' instances (and String's, Array's, Hash's, Float's)
# equal its own count of them, taken when it allocates no more (tests/integration/ruby/census.rb); the same from a
# core of it written by gcore.
census_rows() { # FILE (--json by type) FILE (--json by class): "type T_X N" and "class K N" lines, sorted
	ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); c = JSON.parse(File.read(ARGV[1]))
		puts "type TOTAL #{j["slots"]}", "type FREE #{j["free_slots"]}"
		j["groups"].each { |g| puts "type T_#{g["key"]} #{g["objects"]}" }
		c["groups"].each { |g| puts "class #{g["key"]} #{g["objects"]}" }' "$1" "$2" | sort
}
# census_diff WANT GOT: each of WANT's lines not in GOT as it is there ("none" if all are)
census_diff() { awk 'NR == FNR { got[$1 " " $2] = $3; next } got[$1 " " $2] != $3 { printf "%s %s %s (read %s) ", $1, $2, $3, got[$1 " " $2] + 0; d = 1 }
	END { if (!d) printf "none" }' "$2" "$1"; }
for ver in $RUBIES; do
	if ! start_ruby "$ver" "$top/tests/integration/ruby/census.rb"; then
		skipped "heap: census: ruby $ver: cannot start it ($(tail -n 1 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	root=$("$top/scripts/ruby-chroot" "$ver")
	sysroot=()
	[ "$root" = / ] || sysroot=(--sysroot "$root")
	for how in live core; do
		if [ $how = core ]; then
			rm -f "$work"/core.*
			gcore -o "$work/core" "$pid" >/dev/null 2>&1
			src=(--core "$work/core.$pid" "${sysroot[@]}")
			[ -s "$work/core.$pid" ] || { not_ok "heap: census: ruby $ver: gcore wrote no core"; continue; }
		else
			src=(-p "$pid")
		fi
		"$RBSCOPE" heap summary "${src[@]}" --top 0 --json >"$work/census-t.json" 2>"$work/census.err"
		"$RBSCOPE" heap summary "${src[@]}" --by class --top 0 --json >"$work/census-c.json" 2>>"$work/census.err"
		census_rows "$work/census-t.json" "$work/census-c.json" >"$work/census-$how.got" 2>>"$work/census.err"
	done
	kill -USR1 "$pid"
	await_line "$work/ruby-$ver.out" '^class Float' "$pid"
	stop_ruby "$pid"
	grep '^type \|^class ' "$work/ruby-$ver.out" | sort >"$work/census.want"
	for how in live core; do
		[ -s "$work/census-$how.got" ] || continue
		d=$(census_diff "$work/census.want" "$work/census-$how.got")
		check "heap: census: ruby $ver, $how: every type's count, the slots and the free ones, and the instances of 6 classes equal the process's own counts ($(grep -c . "$work/census.want") figures; differ: $d$(head -c 200 "$work/census.err"))" \
			test "$d" = none
	done
	rm -f "$work"/core.* "$work"/census-*.got
done
# Bad input: a process that is not Ruby, one gone, --by location (a dump's), -p with a dump.
sleep 30 &
"$RBSCOPE" heap summary -p $! >/dev/null 2>"$work/e"; rc=$?
kill $! 2>/dev/null
check "heap: census of a process that is not Ruby: exit 5, one line ($(head -n 1 "$work/e"))" sh -c "test $rc = 5 && grep -q 'not a Ruby process' '$work/e'"
"$RBSCOPE" heap summary -p 999999999 >/dev/null 2>"$work/e"; rc=$?
check "heap: census of no process: exit 3 ($(head -n 1 "$work/e"))" test $rc = 3
"$RBSCOPE" heap summary -p $$ --by location >/dev/null 2>"$work/e"; rc=$?
check "heap: census --by location: exit 2, says allocation sites are a dump's" sh -c "test $rc = 2 && grep -q 'allocation sites' '$work/e'"

dump=$work/heap-3.1.json
# Records whose class field is all ones (IMEMOs of real app dumps carry it), the value a hash table may use for
# its free slots: grouped like any other class, still equal to Ruby's reading.
cp "$dump" "$work/ones.json"
for a in 1 2 3; do
	printf '{"address":"0x7f00000%d0000", "type":"IMEMO", "class":"0xffffffffffffffff", "imemo_type":"callcache", "memsize":40}\n' $a
done >>"$work/ones.json"
for by in class type; do
	ruby "$top/tests/integration/ruby/heap-truth.rb" "$work/ones.json" $by >"$work/truth-ones-$by"
	"$RBSCOPE" heap summary "$work/ones.json" --by $by --top 0 --json 2>"$work/ones.err" | canon >"$work/got-ones-$by"
	check "heap: class 0xffffffffffffffff: summary --by $by equals Ruby's reading ($(grep -c 'ffffffffffffffff' "$work/got-ones-$by") group; $(head -c 100 "$work/ones.err"))" \
		sh -c "cmp -s '$work/truth-ones-$by' '$work/got-ones-$by' && test -s '$work/got-ones-$by'"
done
# Transparent gzip and standard input give the same answer.
"$RBSCOPE" heap summary "$dump" --by class --top 0 >"$work/plain.txt"
gzip -c "$dump" >"$work/dump.json.gz"
"$RBSCOPE" heap summary "$work/dump.json.gz" --by class --top 0 >"$work/gz.txt"
check "heap: a .gz dump reads the same" cmp -s "$work/plain.txt" "$work/gz.txt"
"$RBSCOPE" heap summary - --by class --top 0 <"$dump" >"$work/stdin.txt"
check "heap: - reads standard input" cmp -s "$work/plain.txt" "$work/stdin.txt"
# Bad input: garbage lines are counted and located, the rest is still analysed; nothing valid exits 8.
{ head -n 100 "$dump"; echo 'not json at all'; echo '[1,2,3]'; tail -n +101 "$dump" | head -c 200000; } >"$work/bad.json"
"$RBSCOPE" heap summary "$work/bad.json" >"$work/bad.out" 2>"$work/bad.err"; rc=$?
check "heap: bad lines skipped and reported with their line numbers, the rest analysed" \
	sh -c "test $rc = 0 && grep -q 'are not heap records (first at line 101, 102' '$work/bad.err' && grep -q STRING '$work/bad.out'"
head -c 5000 /dev/urandom >"$work/random.bin"
"$RBSCOPE" heap summary "$work/random.bin" >/dev/null 2>"$work/e"; rc=$?
check "heap: a file with no records: exit 8 and one line" sh -c "test $rc = 8 && grep -q 'no heap records' '$work/e'"
echo '[{"type":"STRING"}]' >"$work/array.json"
"$RBSCOPE" heap summary "$work/array.json" >/dev/null 2>&1; rc=$?
check "heap: a JSON array instead of JSON lines: exit 8" test $rc = 8
"$RBSCOPE" heap summary "$work/no-such.json" 2>"$work/e"; rc=$?
check "heap: a missing file: non-zero exit, names it" sh -c "test $rc != 0 && grep -q 'no-such.json' '$work/e'"
"$RBSCOPE" heap summary "$work" 2>"$work/e"; rc=$?
check "heap: a directory: non-zero exit, says so" sh -c "test $rc != 0 && grep -q 'Is a directory' '$work/e'"
# What `jq -s . dump.json` or JSON.pretty_generate make of a dump: one object over many lines, none a record.
ruby -rjson -e 'puts JSON.pretty_generate(File.foreach(ARGV[0]).first(50).map { |l| JSON.parse(l) })' "$dump" >"$work/pretty.json"
"$RBSCOPE" heap summary "$work/pretty.json" >/dev/null 2>"$work/e"; rc=$?
check "heap: a pretty-printed JSON array: exit 8, no heap records" sh -c "test $rc = 8 && grep -q 'no heap records' '$work/e'"
# A .gz cut short or corrupt in the middle: what came before is analysed, and the cut is said.
head -c $(($(stat -c %s "$work/dump.json.gz") / 2)) "$work/dump.json.gz" >"$work/cut.json.gz"
"$RBSCOPE" heap summary "$work/cut.json.gz" >"$work/cut.out" 2>"$work/e"; rc=$?
check "heap: a .gz cut in half: exit 0, the first half analysed, the cut reported" \
	sh -c "test $rc = 0 && grep -q STRING '$work/cut.out' && grep -q 'corrupt or cut short after [1-9][0-9]* bytes' '$work/e'"
head -c 20 "$work/dump.json.gz" >"$work/cut.json.gz"
"$RBSCOPE" heap summary "$work/cut.json.gz" >/dev/null 2>"$work/e"; rc=$?
check "heap: a .gz cut before its first record: exit 8, one line" \
	sh -c "test $rc = 8 && test \$(wc -l <'$work/e') = 1 && grep -q 'cut short before any heap record' '$work/e'"

# The three-dump diff finds a planted leak exactly, and nothing transient, on every Ruby.
lk=$top/tests/integration/ruby/leak.rb
leak_line=$(grep -n '# LEAK$' "$lk" | cut -d: -f1)
transient_line=$(grep -n '# TRANSIENT$' "$lk" | cut -d: -f1)
for ver in $RUBIES; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap diff: ruby $ver: no Ruby here"; continue; }
	d=$work/leak-$ver
	mkdir -p "$d"
	if [ "$root" = / ]; then
		ruby "$lk" "$d"
	else
		mkdir -p "$root/tmp/rbscope-it/leak" && cp "$lk" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/leak.rb /tmp/rbscope-it/leak && mv "$root"/tmp/rbscope-it/leak/d*.json "$d/"
	fi
	"$RBSCOPE" heap diff "$d/d1.json" "$d/d2.json" "$d/d3.json" --top 0 >"$work/diff-$ver.txt" 2>&1
	check "heap diff: ruby $ver: the planted leak exactly: 200 Strings at leak.rb:$leak_line, first" \
		sh -c "sed -n 4p '$work/diff-$ver.txt' | grep -Eq '^ +200 +[0-9]+ +[^ ]*leak\\.rb:$leak_line +String$'"
	anon_line=$(line_of '# ANONYMOUS' "$lk")
	# (50, and the method caches of the calls that made them, whose class is theirs)
	check "heap diff: ruby $ver: 50 objects of an anonymous class named as Ruby inspects it ($(grep "leak\.rb:$anon_line " "$work/diff-$ver.txt" | head -n 1 | tr -s ' '))" \
		grep -Eq "^ +5[0-9] +[0-9]+ +[^ ]*leak\.rb:$anon_line +#<Class:0x[0-9a-f]{16}>\$" "$work/diff-$ver.txt"
	check "heap diff: ruby $ver: no transient String reported (leak.rb:$transient_line)" \
		sh -c "! grep -Eq 'leak\\.rb:$transient_line +String' '$work/diff-$ver.txt'"
done
"$RBSCOPE" heap diff "$work/leak-3.1/d1.json" "$work/random.bin" >/dev/null 2>&1; rc=$?
check "heap diff: a dump with no records: exit 8" test $rc = 8
# GC.compact between two dumps moves objects and drops their allocation info: diff must say so.
compact='require "objspace"; ObjectSpace.trace_object_allocations_start
	$keep = Array.new(20_000) { |i| "keep #{i}" }; $drop = Array.new(20_000) { |i| "drop #{i}" }
	$keep2 = Array.new(20_000) { |i| "keep2 #{i}" }; $drop = nil; GC.start
	File.open(ARGV[0] + "/c1.json", "w") { |f| ObjectSpace.dump_all(output: f) }; GC.compact
	File.open(ARGV[0] + "/c2.json", "w") { |f| ObjectSpace.dump_all(output: f) }'
for ver in $RUBIES; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap diff: ruby $ver: no Ruby here"; continue; }
	d=$work/compact-$ver
	mkdir -p "$d"
	if [ "$root" = / ]; then
		ruby -e "$compact" "$d"
	else
		mkdir -p "$root/tmp/rbscope-it/compact" && chroot "$root" ruby -e "$compact" /tmp/rbscope-it/compact &&
			mv "$root"/tmp/rbscope-it/compact/c*.json "$d/"
	fi
	"$RBSCOPE" heap diff "$d/c1.json" "$d/c2.json" >"$work/compact.txt" 2>&1
	check "heap diff: ruby $ver: GC.compact between the dumps: 'the heap looks compacted'" \
		grep -q '^warning: [0-9]* objects new in .* the heap looks compacted' "$work/compact.txt"
done
d=$work/leak-3.1
if [ -s "$d/d3.json" ]; then
	check "heap diff: no compaction warning when there was none" sh -c "! grep -q compacted '$work/diff-3.1.txt'"
	# Read whole (gzip, standard input) or cut into parts on every core (plain files), the answer is one.
	gzip -c "$d/d1.json" >"$d/d1.json.gz"
	"$RBSCOPE" heap diff "$d/d1.json.gz" - "$d/d3.json" --top 0 <"$d/d2.json" | tail -n +2 >"$work/diff-gz.txt"
	tail -n +2 "$work/diff-3.1.txt" >"$work/diff-plain.txt"
	check "heap diff: a .gz BEFORE and AFTER from stdin give what the plain files give" cmp -s "$work/diff-plain.txt" "$work/diff-gz.txt"
	"$RBSCOPE" heap diff "$d/d1.json" "$d/d2.json" --top 0 >"$work/diff2.txt"; rc=$?
	check "heap diff: two dumps: exit 0, the planted leak among what is new in AFTER" \
		sh -c "test $rc = 0 && grep -Eq '^ +200 +[0-9]+ +[^ ]*leak\\.rb:$leak_line +String$' '$work/diff2.txt'"
	{ head -n 10 "$d/d2.json"; echo 'not json'; tail -n +11 "$d/d2.json"; echo '{"cut'; } >"$work/d2-bad.json"
	"$RBSCOPE" heap diff "$d/d1.json" "$work/d2-bad.json" "$d/d3.json" --top 0 2>"$work/e" | tail -n +2 >"$work/diff-bad.txt"
	check "heap diff: AFTER's bad lines reported at their numbers (11 and the last), the diff unchanged" \
		sh -c "grep -q 'd2-bad.json: 2 of $(($(wc -l <"$d/d2.json") + 2)) lines are not heap records (first at line 11, $(($(wc -l <"$d/d2.json") + 2)))' '$work/e' &&
			cmp -s '$work/diff-plain.txt' '$work/diff-bad.txt'"
	"$RBSCOPE" heap diff "$d/d1.json" "$work/no-such.json" >/dev/null 2>"$work/e"; rc=$?
	check "heap diff: a missing AFTER: non-zero exit, names it" sh -c "test $rc != 0 && grep -q \"cannot read '$work/no-such.json'\" '$work/e'"
fi

# heap path, retained and strings on a dump with known structures (heapgraph.rb), each figure checked
# against the slow, obvious reading of the same dump with Ruby's JSON parser (heap-graph-truth.rb).
hg=$top/tests/integration/ruby/heapgraph.rb
hg_line() { grep -n "$1" "$hg" | head -n 1 | cut -d: -f1; }
printf 'MODULE PathHolder heapgraph.rb:%s\nHASH Hash heapgraph.rb:%s\nARRAY Array heapgraph.rb:%s\nOBJECT Planted heapgraph.rb:%s\n' \
	"$(hg_line '^module PathHolder')" "$(hg_line '# PATH_HASH$')" "$(hg_line '# PATH_ARRAY$')" "$(hg_line '# PATH_OBJECT$')" \
	>"$work/path-want"
for ver in $RUBIES; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap graph: ruby $ver: no Ruby here"; continue; }
	g=$work/graph-$ver.json
	if [ "$root" = / ]; then
		ruby "$hg" "$g" >"$work/graph-$ver.addr"
	else
		mkdir -p "$root/tmp/rbscope-it" && cp "$hg" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/heapgraph.rb /tmp/rbscope-it/graph.json >"$work/graph-$ver.addr" &&
			mv "$root/tmp/rbscope-it/graph.json" "$g"
	fi
	planted=$(awk '$1 == "planted" { print $2 }' "$work/graph-$ver.addr")
	holder=$(awk '$1 == "holder" { print $2 }' "$work/graph-$ver.addr")
	if [ ! -s "$g" ] || [ -z "$planted" ] || [ -z "$holder" ]; then
		not_ok "heap graph: ruby $ver: could not write a dump"
		continue
	fi
	truth=$work/graph-truth-$ver
	ruby "$top/tests/integration/ruby/heap-graph-truth.rb" "$g" "$planted" "$holder" >"$truth"
	t() { awk -F'\t' -v k="$1" -v i="$2" '$1 == k { print $i }' "$truth"; }

	"$RBSCOPE" heap path "$g" "$planted" >"$work/path.txt" 2>"$work/path.err"; rc=$?
	check "heap path: ruby $ver: exit 0, $(t path_length 2) references from a root, as Ruby's own search finds" \
		sh -c "test $rc = 0 && test $(t path_length 2) -gt 4 && grep -q '^$planted is $(t path_length 2) references from the root \"[a-z_]*\":\$' '$work/path.txt'"
	tail -n 4 "$work/path.txt" | awk '{ sub(/.*\//, "", $NF); print $2, $3, $NF }' >"$work/path-got"
	check "heap path: ruby $ver: ends constant PathHolder -> Hash -> Array -> Planted, each at its line ($(tail -n 4 "$work/path-got" | tr '\n' '|'))" \
		sh -c "cmp -s '$work/path-want' '$work/path-got' && tail -n 1 '$work/path.txt' | grep -q '^  $planted '"

	"$RBSCOPE" heap retained "$g" --top 0 --json >"$work/ret.json"; rc=$?
	ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); h = j["objects"].find { |o| o["address"] == ARGV[1] } || {}
		puts "holder_retained\t#{h["retained"]}\t#{h["retained_objects"]}"
		puts "reachable\t#{j["reachable"]["objects"]}\t#{j["reachable"]["memsize"]}"
		puts "unreachable\t#{j["unreachable"]["objects"]}\t#{j["unreachable"]["memsize"]}"' "$work/ret.json" "$holder" >"$work/ret-got"
	grep -E '^(reachable|unreachable|holder_retained)	' "$truth" >"$work/ret-want"
	check "heap retained: ruby $ver: reachable, unreachable and the holder's retained size ($(t holder_retained 2) bytes, $(t holder_retained 3) objects) as Ruby's searches find" \
		sh -c "test $rc = 0 && test $(t holder_retained 2) -ge 300000 && cmp -s '$work/ret-want' '$work/ret-got'"
	# Every object's retained size, and every group's, equal those of dominators found another way.
	"$RBSCOPE" heap retained "$g" --by class --top 0 --json >"$work/retc.json"
	"$RBSCOPE" heap retained "$g" --by location --top 0 --json >"$work/retl.json"
	ruby -rjson -e 'o, c, l = ARGV.map { |f| JSON.parse(File.read(f)) }
		out = o["objects"].map { |x| "object\t#{x["address"]}\t#{x["retained"]}\t#{x["retained_objects"]}" }
		[["class", c], ["location", l]].each { |by, j| j["groups"].each { |g|
			out << "#{by}\t#{g["key"]}\t#{g["retained"]}\t#{g["retained_objects"]}\t#{g["instances"]}\t#{g["memsize"]}" } }
		puts out.sort' "$work/ret.json" "$work/retc.json" "$work/retl.json" >"$work/dom-got"
	grep -E '^(object|class|location)	' "$truth" >"$work/dom-want"
	check "heap retained: ruby $ver: all $(grep -c '^object' "$work/dom-want") objects' retained sizes, and all groups by class and location, equal Cooper-Harvey-Kennedy's in Ruby" \
		cmp -s "$work/dom-want" "$work/dom-got"
	# The Array and its 300 Strings share a line; the Strings, dominated by the Array, are not counted again.
	check "heap retained --by location: ruby $ver: the RETAINED line counts its Array's retained size once" \
		ruby -rjson -e 'g = JSON.parse(File.read(ARGV[0]))["groups"].find { |x| x["key"].end_with?("heapgraph.rb:#{ARGV[1]}") }
			exit(g && g["retained"] < 2 * 300_000 && g["retained"] >= 300 * 1000 && g["instances"] >= 301 ? 0 : 1)' \
		"$work/retl.json" "$(hg_line '# RETAINED$')"
	cp "$work/ret.json" "$work/ret-$ver.json"

	"$RBSCOPE" heap strings "$g" --top 0 --json >"$work/str.json"; rc=$?
	check "heap strings: ruby $ver: exactly 777 copies of the DUPLICATES value ($(t duplicates 2) by Ruby's count), 776 x 15 bytes wasted" \
		ruby -rjson -e 'v = JSON.parse(File.read(ARGV[0]))["values"].find { |x| x["value"] == "rbscope-dup-777" }
			exit(ARGV[1] == "0" && v && v["count"] == 777 && ARGV[2] == "777" && v["wasted"] == 776 * 15 && !v["truncated"] ? 0 : 1)' \
		"$work/str.json" "$rc" "$(t duplicates 2)"
	check "heap strings: ruby $ver: the 50 copies of 3000 bytes first, 147000 bytes wasted, value cut" \
		ruby -rjson -e 'v = JSON.parse(File.read(ARGV[0]))["values"][0]
			exit(v["value"] =~ /\AL{40,}\z/ && v["truncated"] && v["count"] == 50 && v["bytesize"] == 3000 && v["wasted"] == 147000 ? 0 : 1)' \
		"$work/str.json"
done

g=$work/graph-3.1.json
if [ -s "$g" ]; then
	"$RBSCOPE" heap path "$g" 0x10 >/dev/null 2>"$work/e"; rc=$?
	check "heap path: an address not in the dump: exit 8, one line naming it" \
		sh -c "test $rc = 8 && test \$(wc -l <'$work/e') = 1 && grep -q 'no object at 0x10 ' '$work/e'"
	{ cat "$g"; echo '{"address":"0x18", "type":"OBJECT", "class":"0x0", "memsize":40}'; } >"$work/plus.json"
	"$RBSCOPE" heap path "$work/plus.json" 0x18 >/dev/null 2>"$work/e"; rc=$?
	check "heap path: an object no root reaches: exit 10, says so" sh -c "test $rc = 10 && grep -q 'no root reaches it' '$work/e'"
	"$RBSCOPE" heap retained "$work/plus.json" --top 1 --json >"$work/plus-ret.json"
	check "heap retained: one more unreachable object of 40 bytes counted apart" \
		ruby -rjson -e 'a, b = ARGV.map { |f| JSON.parse(File.read(f))["unreachable"] }
			exit(b["objects"] == a["objects"] + 1 && b["memsize"] == a["memsize"] + 40 ? 0 : 1)' "$work/ret-3.1.json" "$work/plus-ret.json"
	"$RBSCOPE" heap path "$g" zz >/dev/null 2>&1; rc=$?
	check "heap path: an argument that is no address: exit 2" test $rc = 2
	"$RBSCOPE" heap retained "$g" --by nothing >/dev/null 2>&1; rc=$?
	check "heap retained: --by nothing: exit 2" test $rc = 2
	{ head -n 3000 "$g"; printf '{"address":"0x7f'; } >"$work/cut.json"
	"$RBSCOPE" heap retained "$work/cut.json" >"$work/cut.out" 2>"$work/e"; rc=$?
	check "heap retained: a dump cut mid-line: exit 0, the cut line reported" \
		sh -c "test $rc = 0 && grep -q 'objects reachable' '$work/cut.out' && grep -q '1 of 3001 lines are not heap records (first at line 3001)' '$work/e'"
	for cmd in "path 0x10" retained strings; do
		"$RBSCOPE" heap ${cmd%% *} "$work/random.bin" ${cmd#"${cmd%% *}"} >/dev/null 2>"$work/e"; rc=$?
		check "heap ${cmd%% *}: a file with no records: exit 8 and one line" \
			sh -c "test $rc = 8 && test \$(wc -l <'$work/e') = 1 && grep -q 'no heap records' '$work/e'"
	done
	"$RBSCOPE" heap strings "$work/no-such.json" 2>"$work/e"; rc=$?
	check "heap strings: a missing file: non-zero exit, names it" sh -c "test $rc != 0 && grep -q 'no-such.json' '$work/e'"

	# A reader that is gone before the results come (`| head`, `| grep -q`): a write error, said as
	# one, exit 9 as for every command; never "cannot read" of a dump that was read.
	closed_pipe() { # closed_pipe LABEL HEAP-ARGS...: rbscope heap with a pipe for stdout whose reader has gone
		local label=$1; shift
		ruby -e 'r, w = IO.pipe; r.close; pid = spawn(*ARGV, out: w); w.close; Process.wait(pid); exit $?.exitstatus' \
			"$RBSCOPE" heap "$@" 2>"$work/e"; rc=$?
		check "heap $label: stdout a closed pipe: exit 9, 'cannot write the results: Broken pipe' ($rc, $(head -c 80 "$work/e"))" \
			sh -c "test $rc = 9 && test \$(wc -l <'$work/e') = 1 && grep -q '^rbscope: cannot write the results: Broken pipe\$' '$work/e'"
	}
	closed_pipe summary summary "$g"
	closed_pipe "summary --json" summary "$g" --json
	closed_pipe path path "$g" "$(awk '$1 == "planted" { print $2 }' "$work/graph-3.1.addr")"
	closed_pipe retained retained "$g"
	closed_pipe strings strings "$g"
	closed_pipe diff diff "$work/leak-3.1/d1.json" "$work/leak-3.1/d2.json" "$work/leak-3.1/d3.json"
fi

# What Ruby writes unescaped (the "file" of a script named we"ird\) and lines of many MB still read.
weird=$work/q/'we"ird\'
mkdir -p "$work/q" && cp "$hg" "$weird"
(cd "$work" && ruby 'q/we"ird\' "$work/weird.json" >"$work/weird.addr")
"$RBSCOPE" heap path "$work/weird.json" "$(awk '$1 == "planted" { print $2 }' "$work/weird.addr")" >"$work/weird.txt" 2>"$work/e"
check "heap: a script path with a quote and a trailing backslash, written unescaped by Ruby, reads: no bad line" \
	sh -c "tail -n 1 '$work/weird.txt' | grep -q 'Planted  *q/we\"ird\\\\:$(hg_line '# PATH_OBJECT$')\$' && ! test -s '$work/e'"
ruby -robjspace -e '$big = Array.new(1_000_000, Object.new); $s = Array.new(3) { "x" * 6_000_000 }
	GC.start; File.open(ARGV[0], "w") { |f| ObjectSpace.dump_all(output: f) }' "$work/long.json"
"$RBSCOPE" heap strings "$work/long.json" --top 1 >"$work/long.txt" 2>&1
check "heap strings: three 6 MB strings on 6 MB lines: 3 copies, 12000000 bytes wasted" \
	grep -Eq '^ +3 +12000000 +18000000 +6000000  "x{48}"\.\.\.$' "$work/long.txt"
"$RBSCOPE" heap retained "$work/long.json" --top 3 --json >"$work/long.json.ret" 2>&1
# (memsize comes after the references on the line: read right only if the whole line was)
check "heap retained: an Array of 1,000,000 references, one 18 MB line, read with its memsize" \
	ruby -rjson -e 'exit(JSON.parse(File.read(ARGV[0]))["objects"].any? { |o| o["type"] == "ARRAY" && o["memsize"] >= 8_000_000 } ? 0 : 1)' \
	"$work/long.json.ret"
