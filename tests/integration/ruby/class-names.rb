# class-names.rb: how rbscope's heap reports must name a dump's classes, worked out independently of rbscope's C
# (heap-truth.rb and heap-graph-truth.rb require it): as Ruby names them. A singleton class (a dump names none)
# after the named class or module whose class it is, "#<Class:Foo>", else after its real class and its address;
# an anonymous class as Ruby inspects it, "#<Class:0x00007f...>". records: a dump's records, parsed.
def class_namer(records)
  names, singletons, attached = {}, {}, {}
  records.each do |r|
    next unless %w[CLASS MODULE].include?(r["type"])
    if r["name"]
      names[r["address"]] = r["name"]
      attached[r["class"]] = r["name"] if r["class"]
    elsif r["real_class_name"]
      singletons[r["address"]] = r["real_class_name"]
    end
  end
  lambda do |addr|
    next names[addr] if names[addr]
    next "#<Class:#{attached[addr]}>" if singletons[addr] && attached[addr]
    next "#<Class:#<#{singletons[addr]}>> (singleton class #{addr})" if singletons[addr]
    format("#<Class:0x%016x>", addr.to_i(16))
  end
end

# A record's class address, nil for none: IMEMOs give nil's (0x8), not a heap address.
def class_of(record)
  record["class"] && record["class"].to_i(16) >= 0x1000 ? record["class"] : nil
end
