# probes.rb: latency and stack tracers built on Rbscope::Provider: one USDT probe per method, fired only while someone listens.
module Rbscope
  # Providers made by trace_latency/trace_stack, by name: methods added later join the same object.
  @tracer_providers = {}

  OPERATOR_NAMES = {
    "[]" => "aref", "[]=" => "aset", "+" => "op_plus", "-" => "op_minus", "*" => "op_mul", "/" => "op_div",
    "%" => "op_mod", "**" => "op_pow", "==" => "op_eq", "===" => "op_eqq", "=~" => "op_match", "<=>" => "op_cmp",
    "<" => "op_lt", "<=" => "op_le", ">" => "op_gt", ">=" => "op_ge", "<<" => "op_lshift", ">>" => "op_rshift",
    "!" => "op_not", "!=" => "op_neq", "&" => "op_and", "|" => "op_or", "^" => "op_xor", "~" => "op_inv",
    "+@" => "op_uplus", "-@" => "op_uminus", "call" => "call"
  }.freeze
  private_constant :OPERATOR_NAMES

  class << self
    # Fire PROVIDER:METHOD(duration_ns, "Klass#method") after each call of each method, while the probe is
    # enabled (a bpftrace script or `rbscope latency` is attached). Class methods: pass Klass.singleton_class.
    # The provider defaults to the class name in snake case ("Net::HTTP" -> "net_http"). Returns the probes.
    def trace_latency(klass, *methods, provider: nil)
      wrap_methods(klass, methods, provider, [Integer, String]) do |mod, m, probe, label|
        mod.send(:define_method, m) do |*args, &blk|
          return super(*args, &blk) unless probe.enabled?
          t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
          begin
            super(*args, &blk)
          ensure
            probe.fire(Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - t0, label)
          end
        end
      end
    end

    # Fire PROVIDER:METHOD("Klass#method", backtrace) on entry to each method while enabled; the backtrace is
    # the caller's `depth` frames, one per line.
    def trace_stack(klass, *methods, provider: nil, depth: 16)
      wrap_methods(klass, methods, provider, [String, String]) do |mod, m, probe, label|
        mod.send(:define_method, m) do |*args, &blk|
          probe.fire(label, caller(1, depth).join("\n")) if probe.enabled?
          super(*args, &blk)
        end
      end
    end

    # The probe name for a method: "key?" -> "key_p", "save!" -> "save_bang", "name=" -> "name_set".
    def probe_name_for(meth)
      name = meth.to_s
      return OPERATOR_NAMES[name] if OPERATOR_NAMES.key?(name)
      name = name.sub(/\?\z/, "_p").sub(/!\z/, "_bang").sub(/=\z/, "_set").gsub(/[^A-Za-z0-9_]/, "_")
      name =~ /\A[0-9]/ ? "_#{name}" : name
    end

    def provider_name_for(klass)
      name = klass.singleton_class? ? "#{klass.inspect[/[A-Z][\w:]*/]}_class" : klass.name.to_s
      name = name.gsub("::", "_").gsub(/([a-z\d])([A-Z])/, '\1_\2').downcase.gsub(/[^a-z0-9_]/, "_")
      name.empty? ? "anonymous" : name
    end

    private

    # Declare a probe per method and prepend one module whose methods (defined by the block) wrap them.
    def wrap_methods(klass, methods, provider, types)
      raise ArgumentError, "give at least one method" if methods.empty?
      name = provider || provider_name_for(klass)
      prov = (@tracer_providers[name] ||= Provider.new(name))
      probes = methods.map do |m|
        unless klass.method_defined?(m) || klass.private_method_defined?(m)
          raise ArgumentError, "#{klass}##{m} is not defined"
        end
        prov.probe(probe_name_for(m), *types)
      end
      mod = Module.new
      methods.zip(probes) do |m, probe|
        yield mod, m, probe, "#{klass}##{m}"
        mod.send(:ruby2_keywords, m) if mod.respond_to?(:ruby2_keywords, true)
      end
      klass.prepend(mod)
      prov.enable
      probes
    end
  end
end
