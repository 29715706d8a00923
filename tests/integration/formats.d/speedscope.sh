# speedscope.sh: the speedscope file matches the format (one weighted timeline per thread) and opens in speedscope's own app.
ss=$fmtdir/profile.speedscope.json
"$RBSCOPE" report -i "$raw" -f speedscope -o "$ss" 2>"$work/ss.err"
check "speedscope: written ($(head -c 200 "$work/ss.err"))" test -s "$ss"
# Each profile: frame indices in range, a weight per sample, and weights adding up to about the 2 s recorded.
check "speedscope: schema, exporter, and per thread samples/weights that span the recording" ruby -rjson -e '
	j = JSON.parse(File.read(ARGV[0]))
	nf = j["shared"]["frames"].size
	ok = j["$schema"] == "https://www.speedscope.app/file-format-schema.json" && j["exporter"] == "rbscope" &&
		j["name"].include?("pid") && j["shared"]["frames"].all? { |f| f["name"].is_a?(String) } &&
		j["profiles"].all? { |p|
			w = p["weights"]
			p["type"] == "sampled" && p["unit"] == "nanoseconds" && p["samples"].size == w.size &&
				p["samples"].flatten.all? { |i| i.is_a?(Integer) && i >= 0 && i < nf } &&
				w.all? { |x| x.is_a?(Integer) && x > 0 } && p["endValue"] - p["startValue"] == w.sum &&
				w.sum.between?(1.5e9, 2.6e9)
		} && %w[render crunch].all? { |t| j["profiles"].any? { |p| p["name"].start_with?("#{t} (tid ") } }
	exit(ok ? 0 : 1)' "$ss"
if [ -n "$NPM_DIR" ] && [ -n "$CHROMIUM" ]; then
	NPM_DIR=$NPM_DIR CHROMIUM=$CHROMIUM node "$top/tests/integration/browser/speedscope.js" "$ss" \
		render=Report#render crunch=Stats#crunch >"$work/ss.out" 2>&1
	check "speedscope: in speedscope's app, imports, one profile per thread, Sandwich shows each thread's method ($(head -c 300 "$work/ss.out"))" \
		grep -q '^ok' "$work/ss.out"
else
	skipped "speedscope: no Chromium or npm packages for the browser check ($(head -c 200 "$work/npm.err"))"
fi
check "speedscope: a write error fails the command" sh -c "! '$RBSCOPE' report -i '$raw' -f speedscope -o /dev/full 2>/dev/null"
