# diff.sh: report --diff on two recordings of one program, the second with a planted slowdown in one function (it
# tops what grew, in every format), two recordings of the same program (no change above 2 pp), go tool pprof's own
# -diff_base on the same profiles, and bad input (sourced by run).

diffwork=$top/tests/integration/ruby/diffwork.rb
# rec_diff FACTOR NAME...: NAME.raw for each NAME, one after the other, 5 s at 2 kHz of one diffwork.rb FACTOR
# (10,000 samples: a share's noise ~0.7 pp). Two of one process are the same workload twice.
rec_diff() {
	start_ruby "${diff_ruby:-3.1}" "$diffwork" "$1" || return 1
	shift
	local rc=0 name
	for name in "$@"; do
		"$RBSCOPE" record -p "$pid" -r 2000 -d "${diff_secs:-5}" --raw "$work/$name.raw" -f summary -o "$work/$name.txt" \
			2>"$work/$name.err" || rc=1
	done
	stop_ruby "$pid"
	return $rc
}
if rec_diff 1 base same && rec_diff 3 slow; then
	"$RBSCOPE" report --diff "$work/base.raw" "$work/slow.raw" >"$work/diff.txt" 2>"$work/e"
	top_grew=$(sed -n '/^Grew:/{n;n;p;q}' "$work/diff.txt")
	check "diff: the planted slowdown tops what grew ($(echo "$top_grew" | tr -s ' ' | cut -c1-90))" \
		sh -c "echo '$top_grew' | grep -q 'Object#planted '"
	# its share went from about a third to about three fifths: the change said is that
	check "diff: its self share's change is what the two summaries say (within 0.1 pp)" \
		ruby -e '
			share = ->(f) { l = File.readlines(f).find { |x| x.include?("Object#planted ") }; l.split[0].to_f }
			want = share.(ARGV[1]) - share.(ARGV[0])
			got = File.readlines(ARGV[2]).find { |x| x.include?("Object#planted ") }.split[0].to_f
			exit((got - want).abs <= 0.1 && want > 15 ? 0 : 1)' "$work/base.txt" "$work/slow.txt" "$work/diff.txt"
	"$RBSCOPE" report --diff "$work/base.raw" "$work/same.raw" >"$work/same-diff.txt" 2>"$work/e"
	worst=$(ruby -e 'puts File.readlines(ARGV[0]).grep(/ pp /).map { |l| l.split.values_at(0, 2).map { |x| x.to_f.abs }.max }.max.to_f' "$work/same-diff.txt")
	check "diff: two recordings of the same program: no share changed by more than 2 pp (largest $worst pp)" \
		ruby -e "exit($worst <= 2 ? 0 : 1)"
	"$RBSCOPE" report --diff "$work/base.raw" "$work/slow.raw" -o "$work/diff.svg" 2>"$work/e"
	check "diff: the differential flame graph is well-formed SVG, the planted function red with its change" \
		sh -c "xmllint --noout '$work/diff.svg' && grep -o '<title>Object#planted[^<]*' '$work/diff.svg' | grep -q 'pp' &&
			grep -A0 'Object#planted' '$work/diff.svg' | grep -q 'fill=\"rgb(255,'"
	"$RBSCOPE" report --diff "$work/base.raw" "$work/slow.raw" -f collapsed >"$work/diff.folded" 2>"$work/e"
	check "diff: collapsed: each stack with BASE's and NEW's weights, summing to each total" \
		ruby -e '
			b = n = 0
			File.foreach(ARGV[0]) { |l| x, y = l.split.last(2).map(&:to_i); b += x; n += y }
			tot = ->(f) { File.read(f)[/(\d+) samples in/, 1].to_i }
			exit(b == tot.(ARGV[1]) && n == tot.(ARGV[2]) ? 0 : 1)' "$work/diff.folded" "$work/base.err" "$work/slow.err"
	if command -v go >/dev/null; then
		"$RBSCOPE" report -i "$work/base.raw" -o "$work/base.pb.gz" 2>/dev/null
		"$RBSCOPE" report -i "$work/slow.raw" -o "$work/slow.pb.gz" 2>/dev/null
		"$RBSCOPE" report --diff "$work/base.pb.gz" "$work/slow.pb.gz" -o "$work/diff.pb.gz" 2>"$work/e"
		ours=$(go tool pprof -top "$work/diff.pb.gz" 2>/dev/null | awk '$1 ~ /^[0-9.]+[a-zµ]*s$/ { print $NF; exit }')
		theirs=$(go tool pprof -top -normalize -diff_base "$work/base.pb.gz" "$work/slow.pb.gz" 2>/dev/null |
			awk '$1 ~ /^[0-9.]+[a-zµ]*s$/ { print $NF; exit }')
		check "diff: pprof: go tool pprof reads the diff, its top growth the planted function, as its own -diff_base says (ours: $ours; -diff_base: $theirs)" \
			sh -c "test '$ours' = 'Object#planted' && test '$theirs' = 'Object#planted'"
		"$RBSCOPE" report --diff "$work/base.pb.gz" "$work/slow.pb.gz" >"$work/diff-pb.txt" 2>"$work/e"
		check "diff: pprof files (serve's) compare as their --raw recordings do" \
			sh -c "test \"\$(sed -n '/^Grew:/{n;n;p;q}' '$work/diff-pb.txt' | awk '{print \$NF, \$(NF-1)}')\" = \"\$(echo '$top_grew' | awk '{print \$NF, \$(NF-1)}')\""
	else
		skipped "diff: go tool pprof is missing"
	fi
else
	not_ok "diff: the recordings to compare ($(cat "$work"/*.err 2>/dev/null | head -c 300))"
fi
# The other Rubies' recordings, shorter (2 s, 4,000 samples each): the planted slowdown tops what grew.
for diff_ruby in $(rubies_except 3.1); do
	if diff_secs=2 rec_diff 1 base-$diff_ruby && diff_secs=2 rec_diff 3 slow-$diff_ruby; then
		"$RBSCOPE" report --diff "$work/base-$diff_ruby.raw" "$work/slow-$diff_ruby.raw" >"$work/diff-$diff_ruby.txt" 2>"$work/e"
		top_grew=$(sed -n '/^Grew:/{n;n;p;q}' "$work/diff-$diff_ruby.txt")
		check "diff: ruby $diff_ruby: the planted slowdown tops what grew ($(echo "$top_grew" | tr -s ' ' | cut -c1-90))" \
			sh -c "echo '$top_grew' | grep -q 'Object#planted '"
	else
		not_ok "diff: ruby $diff_ruby: the recordings to compare ($(cat "$work"/*-$diff_ruby.err 2>/dev/null | head -c 300))"
	fi
done
diff_ruby=""
# Bad input: one line, its exit code, nothing written.
"$RBSCOPE" report --diff "$work/base.raw" 2>"$work/e"; rc=$?
check "diff: one profile given: exit 2, said" sh -c "test $rc = 2 && grep -q 'give BASE and NEW' '$work/e'"
echo "not a profile" >"$work/junk"
"$RBSCOPE" report --diff "$work/base.raw" "$work/junk" -o "$work/never.svg" 2>"$work/e"; rc=$?
check "diff: a file that is no profile: exit 8, one line naming it, no output file" \
	sh -c "test $rc = 8 && test \$(wc -l <'$work/e') = 1 && grep -q junk '$work/e' && test ! -e '$work/never.svg'"
head -c $(($(stat -c %s "$work/base.pb.gz") / 2)) "$work/base.pb.gz" >"$work/cut.pb.gz"
"$RBSCOPE" report --diff "$work/cut.pb.gz" "$work/base.raw" 2>"$work/e"; rc=$?
check "diff: a pprof file cut short: exit 8, said" sh -c "test $rc = 8 && grep -q 'cut.pb.gz' '$work/e'"
"$RBSCOPE" report --diff "$work/base.raw" "$work/slow.raw" -f speedscope 2>"$work/e"; rc=$?
check "diff: a format that shows no difference: exit 2, the ones that do named" \
	sh -c "test $rc = 2 && grep -q 'summary, flamegraph, pprof or collapsed' '$work/e'"
