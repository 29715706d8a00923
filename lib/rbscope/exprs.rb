# exprs.rb: trace expressions (`rbscope trace -m 'Klass#meth(self, @ivar, __source__, arg0, any.ruby)'`): read and compiled when a trace starts, evaluated by the tracer's hooks at each call.
module Rbscope
  module Agent
    # The expressions of one traced method. #ruby_values and #c_values run inside the traced program's
    # call, from a hook (ext/rbscope/trace.c): they never raise into it (a signal excepted: that was the
    # app's, not ours), and what they return is bounded.
    class Exprs
      VALUE_MAX = 200 # characters of one value's inspect
      IVAR_GET = Kernel.instance_method(:instance_variable_get)
      INSPECT = Kernel.instance_method(:inspect)
      C_ARG = "<C method: not available>"

      # "self, @x, f(a, b)" -> ["self", "@x", "f(a, b)"]: a comma inside brackets or quotes does not split.
      def self.split(text)
        out = []
        cur = +""
        depth = 0
        quote = nil
        chars = text.each_char.to_a
        i = 0
        while i < chars.size
          c = chars[i]
          if quote
            if c == "\\"
              cur << c << chars[i + 1].to_s
              i += 2
              next
            end
            quote = nil if c == quote
          elsif c == '"' || c == "'"
            quote = c
          elsif "([{".include?(c)
            depth += 1
          elsif ")]}".include?(c)
            depth -= 1
          elsif c == "," && depth.zero?
            out << cur.strip
            cur = +""
            i += 1
            next
          end
          cur << c
          i += 1
        end
        out << cur.strip
        out
      end

      class CompileError < StandardError; end

      # The expressions text of one method, for a TracePoint (ruby) or the C-call hook: [exprs, the
      # expressions that want a C method's arguments, which cannot be had] or [nil, error]. Arbitrary
      # Ruby is code run in the process: it needs eval's opt-in.
      def self.compile(label, text, um, ruby, allow_eval)
        list = split(text)
        return [nil, "#{label}: an empty expression in '(#{text})'"] if list.any?(&:empty?)
        ex = allocate
        notes = ex.send(:setup, label, list, um, ruby, allow_eval)
        [ex, notes]
      rescue CompileError => e
        [nil, e.message]
      end

      # From a targeted TracePoint's hook: the method's frame is our caller, its caller the call site.
      def ruby_values(tp)
        src = @source ? where(caller_locations(2, 1)) : nil
        bnd = @binding ? tp.binding : nil
        render(tp.self, bnd, src)
      end

      # From the C-call hook, which runs before a C method's frame is pushed (and after it is popped).
      def c_values(recv)
        src = @source ? where(caller_locations(1, 1)) : nil
        render(recv, nil, src)
      end

      private

      def setup(label, list, um, ruby, allow_eval)
        params = ruby ? um.parameters : []
        # Locals a compiled expression can see: the parameters that have a usable name, once each.
        @names = params.map { |_, n| n.to_s }.grep(/\A[a-z_][A-Za-z0-9_]*\z/).uniq
        # Positional arguments in call order; an unnamed rest (`*`, `...`) ends what can be read.
        @positional = []
        params.each do |kind, n|
          next unless %i[req opt rest].include?(kind)
          break unless n && @names.include?(n.to_s)
          @positional << [kind, n]
        end
        @ruby = ruby
        @source = false
        @binding = false
        c_args = []
        @items = list.map do |e|
          item = classify(e)
          if item[1] == :arg || item[1] == :param || (item[1] == :code && e.match?(/\barg\d+\b/))
            @binding = true
            c_args << e unless ruby
          end
          @binding = true if item[1] == :code && !@names.empty?
          @source = true if item[1] == :source
          if item[1] == :code
            raise CompileError, "#{label}: the expression '#{e}' is Ruby code, which needs the process's opt-in to eval " \
                                "(RBSCOPE_ALLOW_EVAL=1 or Rbscope.allow_eval!); self, @ivar, __source__, argN and " \
                                "parameter names need none" unless allow_eval
            item[2] = compile_code(label, e)
          end
          item
        end
        c_args
      end

      # The note for the user about expressions that want C methods' arguments ({label => [expr, ...]}).
      def self.c_note(wanted)
        return nil if wanted.empty?
        labels = wanted.keys
        exprs = wanted.values.flatten.uniq
        "#{labels.first(3).join(', ')}#{labels.size > 3 ? " and #{labels.size - 3} more" : ''} " \
          "#{labels.size == 1 ? 'is a C method' : 'are C methods'}: Ruby gives no access to a C method's " \
          "arguments, so #{exprs.join(', ')} #{exprs.size == 1 ? 'shows' : 'show'} #{C_ARG} (or nil in code)"
      end

      def classify(e)
        return [e, :self] if e == "self"
        return [e, :source] if e == "__source__"
        return [e, :ivar, e.to_sym] if e.match?(/\A@[A-Za-z_][A-Za-z0-9_]*\z/)
        return [e, :param, e.to_sym] if @names.include?(e)
        return [e, :arg, Integer(e[3..], 10)] if e.match?(/\Aarg\d+\z/)
        [e, :code]
      end

      # Compiled once into a method of a module of its own, then bound to each receiver: self is the
      # receiver (its ivars, its private methods), the parameters are locals, argN the positional
      # arguments; nothing is added to the receiver (instance_exec would give it a singleton class).
      def compile_code(label, e)
        nums = e.scan(/\barg(\d+)\b/).flatten.map(&:to_i).uniq.reject { |n| @names.include?("arg#{n}") }
        src = "def __rbscope_expr(__rbscope_args#{@names.map { |n| ", #{n}" }.join})" \
              "#{nums.map { |n| "; arg#{n} = __rbscope_args[#{n}]" }.join}\n(#{e}\n)\nend"
        mod = Module.new
        mod.module_eval(src, "(trace expression)", 0)
        mod.instance_method(:__rbscope_expr)
      rescue SyntaxError => x
        raise CompileError, "#{label}: cannot compile '#{e}': #{x.message.lines.first(3).join.strip}"
      end

      def where(locs)
        l = locs&.first
        l ? "#{l.path}:#{l.lineno}" : "?"
      end

      def render(recv, bnd, src)
        args = nil
        @items.map do |label, kind, x|
          text = begin
            case kind
            when :self then show(recv)
            when :source then src
            when :ivar then show(IVAR_GET.bind_call(recv, x))
            when :param then bnd ? show(bnd.local_variable_get(x)) : C_ARG
            when :arg
              next "#{label}=#{C_ARG}" unless bnd
              args ||= positional(bnd)
              x < args.size ? show(args[x]) : "<none>"
            when :code
              args ||= bnd ? positional(bnd) : []
              show(x.bind_call(recv, args, *@names.map { |n| bnd&.local_variable_get(n) }))
            end
          rescue Exception => e # rubocop:disable Lint/RescueException -- nothing of ours may raise into the app
            raise if e.is_a?(SignalException)
            failure(e)
          end
          "#{label}=#{text}"
        end.join(", ")
      end

      def positional(bnd)
        @positional.flat_map do |kind, n|
          v = bnd.local_variable_get(n)
          kind == :rest ? v : [v]
        end
      end

      def show(v)
        s = begin
          v.inspect
        rescue NoMethodError
          INSPECT.bind_call(v) # a BasicObject
        end
        clip(s.is_a?(String) ? s : INSPECT.bind_call(v))
      end

      def failure(e)
        msg = begin
          e.message.to_s
        rescue Exception # rubocop:disable Lint/RescueException
          "?"
        end
        clip("<#{e.class}: #{msg}>")
      end

      # One line, of bounded size, whatever encoding and content the inspect had.
      def clip(s)
        s = s.scrub("?") unless s.valid_encoding?
        s = "#{s[0, VALUE_MAX]}..." if s.length > VALUE_MAX
        s.match?(/[\r\n]/) ? s.gsub("\n", "\\n").gsub("\r", "\\r") : s
      end
    end
  end
end
