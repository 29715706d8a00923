# agent.rb: the agent's Ruby half: start-up, fork handling, and the answers to requests that need Ruby (backtraces, GC, eval, heap dumps, trace plans).
module Rbscope
  module Agent
    @allow_eval = ENV["RBSCOPE_ALLOW_EVAL"] == "1"
    @started_pid = nil
    @in_heapdump = false

    class << self
      attr_accessor :allow_eval

      # Listen on the control socket. The socket's native thread wakes us with a real-time signal
      # nobody else handles; its trap starts the serving thread, which lives only while a client is connected.
      def start
        return if @started_pid == Process.pid
        @wake_signal ||= __free_signal
        unless @wake_signal
          warn "rbscope: agent not started: no free real-time signal"
          return
        end
        Signal.trap(@wake_signal) { wake }
        begin
          __start(@wake_signal)
        rescue RuntimeError => e
          warn "rbscope: agent not listening: #{e.message}"
          return
        end
        @started_pid = Process.pid
        at_exit { __stop if @started_pid == Process.pid }
      end

      def wake
        return unless __claim
        t = Thread.new { __serve }
        t.name = "rbscope"
        t.report_on_exception = false
      end

      # In a fork's child (Process._fork, Ruby 3.1+): its own socket, none of the parent's clients.
      def after_fork
        __after_fork
        @started_pid = nil
        start unless @in_heapdump
      end

      def hello(_body, _fd)
        [true, "rbscope-agent #{VERSION}\nproto 1\npid #{Process.pid}\nruby #{RUBY_VERSION}\n" \
               "description #{RUBY_DESCRIPTION}\neval #{@allow_eval ? 'allowed' : 'refused'}\n"]
      end

      def backtraces(_body, _fd)
        out = +""
        Thread.list.each_with_index do |t, i|
          next if t == Thread.current
          # The main thread is the thread that started the process, or forked it: its tid is the pid. (Ruby's
          # own copy of it in a forked child, a Puma worker, still holds the parent's.)
          tid = t == Thread.main ? Process.pid : (t.native_thread_id if t.respond_to?(:native_thread_id))
          name = t.name || (t == Thread.main ? "main" : nil)
          out << "Thread #{i + 1}#{name ? " \"#{name}\"" : ''}#{tid ? " tid #{tid}" : ''} #{t.status || 'dead'}\n"
          (t.backtrace || []).each { |l| out << "    #{l}\n" }
          out << "\n"
        end
        [true, out]
      end

      def gcstat(body, _fd)
        stat = GC.stat
        counts = ObjectSpace.count_objects
        if body == "json"
          require "json"
          return [true, JSON.generate("gc" => stat, "objects" => counts) + "\n"]
        end
        out = +"GC.stat\n"
        stat.each { |k, v| out << format("  %-40s %d\n", k, v) }
        out << "ObjectSpace.count_objects\n"
        counts.sort_by { |_, v| -v }.each { |k, v| out << format("  %-40s %d\n", k, v) }
        [true, out]
      end

      def eval_request(code, _fd)
        unless @allow_eval
          return [false, "eval refused: the process did not opt in (start it with RBSCOPE_ALLOW_EVAL=1 or call Rbscope.allow_eval!)"]
        end
        begin
          [true, TOPLEVEL_BINDING.eval(code, "(rbscope eval)").inspect]
        rescue Exception => e # rubocop:disable Lint/RescueException -- report everything, raise nothing into the app
          [false, "#{e.class}: #{e.message}\n#{(e.backtrace || []).first(10).map { |l| "    #{l}" }.join("\n")}"]
        end
      end

      # ObjectSpace.dump_all from a forked child into the client's file: the app runs on meanwhile.
      def heapdump(_body, fd)
        return [false, "no output file was passed"] unless fd
        require "objspace"
        out = IO.for_fd(fd, "w", autoclose: false)
        out.sync = true
        rd, wr = IO.pipe
        @in_heapdump = true
        pid = begin
          Process.fork do
            rd.close
            begin
              ObjectSpace.dump_all(output: out)
              out.flush
              exit!(0)
            rescue Exception => e # rubocop:disable Lint/RescueException
              wr.write("#{e.class}: #{e.message}")
              exit!(1)
            end
          end
        ensure
          @in_heapdump = false
        end
        wr.close
        why = rd.read
        rd.close
        _, status = Process.wait2(pid)
        return [false, "heap dump failed: #{why.empty? ? status.inspect : why}"] unless status.success?
        [true, "wrote #{out.stat.size} bytes (pid #{Process.pid}, dumped by child #{pid})"]
      rescue SystemCallError, IOError => e
        [false, "heap dump failed: #{e.message}"]
      end

      # --- tracing ---

      # Settings from the CLI, one "key value" per line -> the tracer's plan (trace.c).
      def trace_plan(settings)
        plan = { methods: [], firehose: false, slow_ns: 0, slow_cpu: false, gc: false, buffer: 8 << 20, notes: +"" }
        skipped = []
        c_args = {}
        settings.each_line do |line|
          key, val = line.chomp.split(" ", 2)
          case key
          when "method"
            sel, text = split_selector(val.to_s)
            found, err = resolve(sel)
            if err
              skipped << err
            else
              err = attach_exprs(found, text, c_args) if text
              return { error: err } if err
              plan[:methods].concat(found)
            end
          when "firehose" then plan[:firehose] = true
          when "slow" then plan[:slow_ns] = Integer(val)
          when "slow_cpu" then plan[:slow_cpu] = true
          when "gc" then plan[:gc] = true
          when "buffer"
            size = Integer(val)
            return { error: "buffer must be a power of two from 64 KiB to 1 GiB" } unless size >= 65_536 && size <= (1 << 30) && (size & (size - 1)).zero?
            plan[:buffer] = size
          when nil then next
          else return { error: "unknown trace setting '#{key}'" }
          end
        end
        plan[:methods].uniq! { |m| [m[1], m[2]] }
        skipped.uniq!
        # A selector that names nothing is an error when it is all there is; among others (a tracer
        # file naming libraries this app does not load) it is skipped and said so.
        return { error: skipped.join("; ") } if plan[:methods].empty? && !skipped.empty?
        if plan[:methods].empty? && !plan[:firehose] && !plan[:gc] && plan[:slow_ns].zero?
          return { error: "nothing to trace: give methods (-m), --firehose, --slow or --gc" }
        end
        plan[:firehose] = true if plan[:slow_ns].positive? && plan[:methods].empty?
        plan[:notes] = trace_header(plan)
        plan[:notes] << " (skipped #{skipped.size}: #{skipped.first(3).join('; ')}#{skipped.size > 3 ? '; ...' : ''})" unless skipped.empty?
        plan[:notes] << "; #{Exprs.c_note(c_args)}" unless c_args.empty?
        plan
      rescue ArgumentError => e
        { error: e.message }
      end

      # What the trace covers, for the CLI's first line: the methods (the first few by name), the slow-call
      # threshold and GC.
      def trace_header(plan)
        parts = []
        names = plan[:methods].map(&:first)
        unless names.empty?
          shown = names.first(4).join(", ")
          more = names.size > 4 ? " and #{names.size - 4} more" : ""
          parts << "tracing #{names.size} method#{names.size == 1 ? '' : 's'} (#{shown}#{more})"
        end
        parts << "tracing every Ruby method call" if plan[:firehose] && plan[:slow_ns].zero?
        if plan[:slow_ns].positive?
          what = names.empty? ? "every method" : "these"
          parts << "showing calls of #{what} slower than #{format('%g', plan[:slow_ns] / 1e6)} ms " \
                   "(#{plan[:slow_cpu] ? 'wall and CPU time' : 'wall time'}) with their callers"
        end
        parts << "GC: each collection's pause, marking and sweeping" if plan[:gc]
        +parts.join("; ")
      end

      # "Klass#meth(expr, ...)" -> ["Klass#meth", "expr, ..."]; the expressions are nil without parentheses.
      def split_selector(sel)
        m = sel.strip.match(/\A([^(]*)\((.*)\)\z/m) or return [sel.strip, nil]
        [m[1].strip, m[2].strip.empty? ? nil : m[2]]
      end

      # Compile a selector's expressions for each method it named (entry [5]): an error message or nil.
      # c_args gets the expressions that want arguments of C methods, by method.
      def attach_exprs(found, text, c_args)
        require_relative "exprs"
        found.each do |m|
          ex, more = Exprs.compile(m[0], text, m[3], m[4], @allow_eval)
          return more unless ex
          m[5] = ex
          c_args[m[0]] = more unless more.empty?
        end
        nil
      end

      # "Klass#meth", "Klass.meth", "Klass#", "Klass." or "meth" -> [[label, owner, name, UnboundMethod, ruby?], ...]
      # (trace_plan adds the method's Exprs as [5] when the selector had expressions)
      def resolve(sel)
        sel = sel.strip
        if (m = sel.match(/\A(.+?)(#|\.)([^#.]*)\z/))
          mod = constant(m[1]) or return [nil, "no class or module named #{m[1]}"]
          target = m[2] == "#" ? mod : mod.singleton_class
          names = if m[3].empty?
                    m[2] == "#" ? mod.instance_methods(false) + mod.private_instance_methods(false) : mod.singleton_methods(false)
                  else
                    [m[3].to_sym]
                  end
          found = names.filter_map { |n| method_entry(target, n) }
          found = detached_entries(target, names.first) if found.empty? && !m[3].empty?
          return [nil, "no method #{sel}"] if found.empty?
          [found, nil]
        elsif sel.match?(/\A[A-Za-z_][A-Za-z0-9_]*[?!=]?\z/) || sel.match?(/\A[-+*\/%<>=!~\[\]^&|]+\z/)
          name = sel.to_sym
          found = []
          ObjectSpace.each_object(Module) do |mod|
            found << method_entry(mod, name) if mod.method_defined?(name, false) || mod.private_method_defined?(name, false)
          rescue StandardError
            next
          end
          found.compact!
          return [nil, "no method named #{sel} in any class"] if found.empty?
          [found, nil]
        else
          [nil, "cannot read the method selector '#{sel}'"]
        end
      end

      # Methods removed from their class yet still called through an UnboundMethod kept elsewhere, as Sinatra
      # does with its routes (define_method "GET /json", instance_method, remove_method): profiles name such a
      # frame ShopApp#GET /json, and so does trace -m.
      def detached_entries(target, name)
        found = []
        ObjectSpace.each_object(UnboundMethod) do |um|
          found << [label(um.owner, name), um.owner, name, um, !um.source_location.nil?] if um.name == name && um.owner == target
        rescue StandardError
          next
        end
        found.uniq { |e| e[3].source_location || e[3].object_id }
      end

      def constant(path)
        path.delete_prefix("::").split("::").inject(Object) { |m, c| m.const_get(c, false) }
      rescue NameError, TypeError
        nil
      end

      def method_entry(target, name)
        um = target.instance_method(name)
        owner = um.owner
        ruby = !um.source_location.nil?
        [label(owner, name), owner, name, um, ruby]
      rescue NameError
        nil
      end

      def label(klass, mid)
        name = mid ? mid.to_s : "?"
        return name unless klass.is_a?(Module)
        if klass.singleton_class?
          owner = klass.respond_to?(:attached_object) ? (klass.attached_object rescue nil) : nil
          text = owner.is_a?(Module) ? (owner.name || owner.inspect) : klass.inspect[/\A#<Class:(.*)>\z/m, 1] || klass.inspect
          "#{text}.#{name}"
        else
          "#{klass.name || klass.inspect}##{name}"
        end
      end

      def enable_target(tp, um)
        tp.enable(target: um)
        true
      rescue ArgumentError, RuntimeError
        false
      end
    end

    # A forked child gets its own channel (Process._fork exists from Ruby 3.1).
    module ForkHook
      def _fork
        pid = super
        Rbscope::Agent.after_fork if pid.zero?
        pid
      end
    end
    Process.singleton_class.prepend(ForkHook) if Process.respond_to?(:_fork)
  end
end
