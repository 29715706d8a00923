# heap-truth.rb: what `rbscope heap summary --by BY` must report for a dump, worked out with Ruby's own JSON
# parser (slowly, record by record). Prints "key<TAB>objects<TAB>memsize" lines, sorted.
# Usage: ruby heap-truth.rb DUMP BY   (BY: type, class, location, file or generation)
require "json"
dump, by = ARGV
recs = File.foreach(dump).map { |l| JSON.parse(l) }.reject { |r| r["type"] == "ROOT" }
# Classes named as Ruby names them: a singleton class (no name in a dump) after the named class or module whose
# class it is, "#<Class:Foo>", else after its real class and its address; an anonymous class as Ruby inspects it.
names, singletons, attached = {}, {}, {}
recs.each do |r|
  next unless %w[CLASS MODULE].include?(r["type"])
  if r["name"]
    names[r["address"]] = r["name"]
    attached[r["class"]] = r["name"] if r["class"]
  elsif r["real_class_name"]
    singletons[r["address"]] = r["real_class_name"]
  end
end
class_name = lambda do |addr|
  next "(no class: internal objects)" if addr.nil? || addr.to_i(16) < 0x1000 # IMEMOs: nil's 0x8
  next names[addr] if names[addr]
  next "#<Class:#{attached[addr]}>" if singletons[addr] && attached[addr]
  next "#<Class:#<#{singletons[addr]}>> (singleton class #{addr})" if singletons[addr]
  format("#<Class:0x%016x>", addr.to_i(16))
end
groups = Hash.new { |h, k| h[k] = [0, 0] }
recs.each do |r|
  key = case by
        when "type" then r["type"]
        when "class" then class_name.(r["class"])
        when "location" then r["file"] ? "#{r["file"]}:#{r["line"]}" : "(no allocation info)"
        when "file" then r["file"] || "(no allocation info)"
        when "generation" then r["generation"] ? r["generation"].to_s : "(no allocation info)"
        end
  groups[key][0] += 1
  groups[key][1] += r["memsize"].to_i
end
groups.map { |k, (n, m)| "#{k}\t#{n}\t#{m}" }.sort.each { |l| puts l }
