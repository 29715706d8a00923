# synth-raw.rb: write a large rbscope --raw recording (format in src/profile/raw.c) for the writers' bench:
# STACKS unique stacks over SAMPLES samples, shaped like an app's: a few deep trunks that branch out.
# Usage: ruby synth-raw.rb OUT [STACKS] [SAMPLES]
out, nstacks, nsamples = ARGV[0], (ARGV[1] || 100_000).to_i, (ARGV[2] || 1_000_000).to_i
rng = Random.new(42)
arena = +"\0"
intern = {}
str = ->(s) { intern[s] ||= (arena.bytesize.tap { arena << s << "\0" }) }
frames = []
frame_ids = {}
frame = lambda do |name, path, line, kind|
  frame_ids[[name, path, line, kind]] ||= (frames << [str[name], str[path], line, kind]).size - 1
end
funcs = Array.new(3000) { |i| ["App::Mod#{i % 97}#meth#{i}", "app/models/file#{i % 211}.rb", 1 + i % 300, i % 5 == 0 ? 1 : 0] }
pool = []
stacks = []
seen = {}
while stacks.size < nstacks
  depth = 8 + rng.rand(40)
  trunk = rng.rand(20)
  ids = Array.new(depth) do |d|
    f = d < 6 ? funcs[(trunk * 7 + d) % funcs.size] : funcs[rng.rand(d < 15 ? 300 : funcs.size)]
    frame[*f]
  end
  next if seen[ids]
  seen[ids] = true
  stacks << [pool.size, ids.size]
  pool.concat(ids)
end
counts = Array.new(nstacks, nsamples / nstacks)
(nsamples - counts.sum).times { |i| counts[i % nstacks] += 1 }
File.open(out, "wb") do |f|
  f << "RBSCRAW2" << [4242, 1000, nsamples * 1_000_000, 0, 0, 0, 0].pack("VVQ<Q<Q<Q<Q<")
  ver = str["3.1.2"]; cmd = str["synthetic"]
  f << [ver, cmd].pack("VV") << [arena.bytesize].pack("Q<") << arena
  f << [frames.size].pack("V") << frames.map { |a| a.pack("VVl<V") }.join
  f << [pool.size].pack("Q<") << pool.pack("V*")
  f << [stacks.size].pack("V") << stacks.each_with_index.map { |(s, l), i| [s, l, counts[i]].pack("VVQ<") }.join
  f << [0].pack("Q<") << [0].pack("V") << "RBSCEND2"
end
