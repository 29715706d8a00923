# heap-truth.rb: what `rbscope heap summary --by BY` must report for a dump, worked out with Ruby's own JSON
# parser (slowly, record by record). Prints "key<TAB>objects<TAB>memsize" lines, sorted.
# Usage: ruby heap-truth.rb DUMP BY   (BY: type, class, location, file or generation)
require "json"
require_relative "class-names"
dump, by = ARGV
recs = File.foreach(dump).map { |l| JSON.parse(l) }.reject { |r| r["type"] == "ROOT" }
namer = class_namer(recs)
class_name = ->(r) { class_of(r) ? namer.(class_of(r)) : "(no class: internal objects)" }
groups = Hash.new { |h, k| h[k] = [0, 0] }
recs.each do |r|
  key = case by
        when "type" then r["type"]
        when "class" then class_name.(r)
        when "location" then r["file"] ? "#{r["file"]}:#{r["line"]}" : "(no allocation info)"
        when "file" then r["file"] || "(no allocation info)"
        when "generation" then r["generation"] ? r["generation"].to_s : "(no allocation info)"
        end
  groups[key][0] += 1
  groups[key][1] += r["memsize"].to_i
end
groups.map { |k, (n, m)| "#{k}\t#{n}\t#{m}" }.sort.each { |l| puts l }
