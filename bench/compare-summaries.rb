# compare-summaries.rb [--merge-blocks] [--drop-stackprof] REF OTHER [OTHER2] [N]: the N (default 15) functions with
# the most self time in REF (an `rbscope ... -f summary` or a `stackprof --text` output), their self shares in each
# file side by side, and the largest gap between REF and each other file over every function either names.
# --merge-blocks counts "block (2 levels) in X" as X, as stackprof does. --drop-stackprof leaves out StackProf's own
# methods (writing its results at exit, which an outside sampler sees and stackprof does not) and scales the rest
# back to 100%. Used by bench/run.
MERGE = ARGV.delete("--merge-blocks")
DROP = ARGV.delete("--drop-stackprof")

def load(path)
  rows = Hash.new(0)
  File.foreach(path) do |l|
    if l =~ /\A\s*([\d.]+)%\s+[\d.]+%\s+\d+\s+\d+\s+(.+?)(?: \(([^()]*|\(.*\))\))?\s*\z/ # rbscope summary
      share, name = $1.to_f, $2
      name = name.sub(/\Ablock (\(\d+ levels\) )?in /, "") if MERGE
      rows[name] += share
    elsif l =~ /\A\s*\d+\s+\([\d.]+%\)\s+\d+\s+\(([\d.]+)%\)\s+(.+?)\s*\z/ # stackprof --text
      share, name = $1.to_f, $2
      name = { "(marking)" => "(garbage collection: marking)", "(sweeping)" => "(garbage collection: sweeping)" }.fetch(name, name)
      rows[name] += share
    end
  end
  if DROP
    dropped = rows.select { |k, _| k =~ /\AStackProf[.#]/ }
    rows.reject! { |k, _| dropped.key?(k) }
    scale = 100.0 / (100.0 - dropped.values.sum)
    rows.transform_values! { |v| v * scale }
  end
  rows
end
n = ARGV.last =~ /\A\d+\z/ ? ARGV.pop.to_i : 15
ref, *others = ARGV.map { |p| load(p) }
puts format("%8s %s  function", "ref", others.each_index.map { |i| format("%8s", "other#{i + 1}") }.join(" "))
ref.sort_by { |_, v| -v }.first(n).each do |name, v|
  puts format("%7.2f%% %s  %s", v, others.map { |o| format("%7.2f%%", o.fetch(name, 0)) }.join(" "), name[0, 90])
end
others.each_with_index do |o, i|
  names = ref.keys | o.keys
  worst = names.max_by { |k| (ref.fetch(k, 0) - o.fetch(k, 0)).abs }
  puts format("largest gap, other%d: %.2f pp (%s: %.2f%% vs %.2f%%)", i + 1, (ref.fetch(worst, 0) - o.fetch(worst, 0)).abs,
              worst[0, 70], ref.fetch(worst, 0), o.fetch(worst, 0))
end
