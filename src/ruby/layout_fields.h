/* layout_fields.h: the list of VM struct offsets and constants a Ruby layout carries (an X-macro). */
/*
 * Each X(name) is one int64_t member of struct ruby_layout. Offsets are in
 * bytes; a field that does not exist in a version is -1. tools/layout-probe.c
 * must define F_<name> for every entry, so the generator cannot forget one.
 */
#define RUBY_LAYOUT_FIELDS(X) \
	/* identity */ \
	X(api_major) X(api_minor) X(api_teeny) \
	/* special constants and object flags */ \
	X(qfalse) X(qtrue) X(qnil) X(qundef) \
	X(t_mask) X(t_object) X(t_class) X(t_module) X(t_string) X(t_array) X(t_iclass) X(t_imemo) \
	/* the other types a heap slot holds (a census counts each) */ \
	X(t_none) X(t_float) X(t_regexp) X(t_hash) X(t_struct) X(t_bignum) X(t_file) X(t_data) X(t_match) \
	X(t_complex) X(t_rational) X(t_symbol) X(t_node) X(t_zombie) X(t_moved) \
	X(fl_ushift) X(fl_singleton) X(imemo_mask) X(imemo_ment) X(imemo_iseq) X(imemo_svar) X(svar_cref_or_me) \
	X(rbasic_flags) X(rbasic_klass) \
	/* RString: len_in_flags is 1 when embedded strings keep their length in flags */ \
	X(rstring_noembed) X(rstring_embed_len_mask) X(rstring_embed_len_shift) \
	X(rstring_len) X(rstring_heap_len) X(rstring_heap_ptr) X(rstring_embed_ary) \
	/* RArray */ \
	X(rarray_embed_flag) X(rarray_embed_len_mask) X(rarray_embed_len_shift) \
	X(rarray_heap_len) X(rarray_heap_ptr) X(rarray_embed_ary) \
	/* rb_vm_t and rb_ractor_t: where the thread list and the GVL owner live */ \
	X(vm_main_thread) X(vm_main_ractor) X(vm_living_threads) X(vm_gvl_owner) \
	X(ractor_threads_set) X(ractor_gvl_owner) \
	/* every Ractor (3.0+): the VM's list of them and its length, each one's link in it, its id and name */ \
	X(vm_ractor_set) X(vm_ractor_cnt) X(ractor_vmlr_node) X(ractor_id) X(ractor_name) \
	/* rb_thread_t */ \
	X(th_lt_node) X(th_self) X(th_ractor) X(th_vm) X(th_ec) X(th_name) \
	X(th_status_byte) X(th_status_shift) X(th_status_bits) \
	X(th_tid) X(th_nt) X(nt_tid) X(th_thread_id) X(th_unblock_func) \
	/* 3.3+: whether a thread has a native thread of its own (M:N threads do not) */ \
	X(th_dedicated_byte) X(th_dedicated_shift) X(th_dedicated_bits) \
	X(thread_runnable) X(thread_stopped) X(thread_stopped_forever) X(thread_killed) \
	/* rb_execution_context_t and rb_control_frame_t */ \
	X(ec_vm_stack) X(ec_vm_stack_size) X(ec_cfp) X(ec_thread_ptr) \
	X(cfp_size) X(cfp_pc) X(cfp_sp) X(cfp_iseq) X(cfp_self) X(cfp_ep) X(cfp_jit_return) \
	X(frame_magic_mask) X(frame_magic_method) X(frame_magic_block) X(frame_magic_class) \
	X(frame_magic_top) X(frame_magic_cfunc) X(frame_magic_ifunc) X(frame_magic_eval) \
	X(frame_magic_rescue) X(frame_magic_dummy) X(frame_flag_cframe) X(frame_flag_bmethod) X(env_flag_local) \
	X(env_index_me_cref) X(env_index_specval) X(env_index_flags) \
	/* rb_iseq_t and its constant body */ \
	X(iseq_body) X(body_type) X(body_type_size) X(body_pathobj) X(body_label) X(body_base_label) \
	X(body_first_lineno) X(body_first_lineno_size) X(body_iseq_encoded) X(body_iseq_size) \
	X(body_insns_info_body) X(body_insns_info_positions) X(body_insns_info_size) \
	X(body_succ_index_table) X(body_parent_iseq) X(insn_info_size) X(insn_info_line_no) \
	/* 3.4+: a method in Ruby that backtraces show as a C method (its builtin_attrs has c_trace) */ \
	X(body_builtin_attrs) X(builtin_attr_c_trace) \
	/* 3.1's YJIT: an iseq's blocks of JIT code (a darray of darrays of block_t *), each one's instructions and code */ \
	X(body_yjit_blocks) X(darray_size) X(darray_data) \
	X(yjit_block_iseq) X(yjit_block_idx) X(yjit_block_end_idx) X(yjit_block_start) X(yjit_block_end) \
	X(iseq_type_top) X(iseq_type_method) X(iseq_type_block) X(iseq_type_class) \
	X(iseq_type_rescue) X(iseq_type_ensure) X(iseq_type_eval) X(iseq_type_main) \
	/* 1 where backtraces name a rescue or ensure clause as the code it is in and leave that code's frame out (3.4+) */ \
	X(rescue_as_parent) \
	/* method entries and definitions */ \
	X(me_flags) X(me_defined_class) X(me_def) X(me_called_id) X(me_owner) \
	X(def_type_byte) X(def_type_shift) X(def_type_bits) X(def_original_id) \
	X(method_type_iseq) X(method_type_cfunc) X(method_type_bmethod) \
	/* classes: the extension is a pointer (classext_ptr) or follows the RClass (classext_inline) */ \
	X(rclass_size) X(classext_ptr) X(classext_inline) X(classext_iv_tbl) X(classext_iv_ptr) \
	X(classext_classpath) X(classext_attached_object) \
	/* object shapes, where a class's path is an ivar found through them (3.2: no classpath field) */ \
	X(vm_shape_list) X(shape_size) X(shape_edge_name) X(shape_next_iv_index) X(shape_parent_id) \
	X(shape_type) X(shape_type_ivar) X(shape_flag_shift) X(shape_id_bits) \
	/* the GC's state in rb_objspace (gc.c's own struct: measured on gc.c compiled with -g, see gen-layouts) */ \
	X(vm_objspace) X(gc_mode_byte) X(gc_mode_shift) X(gc_mode_bits) X(gc_during_byte) X(gc_during_shift) \
	X(gc_compacting_byte) X(gc_compacting_shift) X(gc_mode_marking) X(gc_mode_sweeping) X(gc_mode_compacting) \
	/* and its counters (GC.stat's count, major_gc_count, time): 3.1 sums the time, 3.3+ marking and sweeping apart */ \
	X(gc_count) X(gc_major_count) X(gc_time_ns) X(gc_mark_ns) X(gc_sweep_ns) \
	/* and its heap's slots (GC.stat's heap_live_slots, heap_free_slots): counted in rb_objspace (2.7, 3.1) or \
	 * in each size pool of its array (3.3: size_pools, 3.4: heaps; 2.7 has none: the objspace is its one pool) */ \
	X(gc_allocated) X(gc_freed) X(gc_final) X(gc_pools) X(gc_pool_count) X(gc_pool_size) \
	X(gc_pool_eden_slots) X(gc_pool_tomb_slots) X(gc_pool_allocated) X(gc_pool_freed) X(gc_pool_final) \
	/* and its heap pages, for a census of the objects (heap census): the array of pages sorted by address \
	 * (2.7-3.3: a heap_page ** and its length, allocated_pages; 3.4: a darray, its length the first word \
	 * of its header, its elements gc_pages_darray bytes in), each page's first slot, slot count and (3.1+) \
	 * slot size; 2.7's slots are all an RVALUE's 40 bytes */ \
	X(gc_pages_sorted) X(gc_pages_allocated) X(gc_pages_darray) X(gc_page_start) X(gc_page_total_slots) \
	X(gc_page_slot_size) \
	/* st_table */ \
	X(st_entries) X(st_entries_start) X(st_entries_bound) X(st_entry_size) X(st_entry_key) X(st_entry_record) \
	/* the global symbol table (rb_symbols_t) and ID encoding */ \
	X(symbols_size) X(symbols_last_id) X(symbols_str_sym) X(symbols_ids) \
	X(id_entry_unit) X(id_entry_size) X(id_scope_shift) X(last_op_id) X(id_serial_each) \
	/* values shown by snapshot --locals: immediates (Fixnum, Flonum, static Symbol), a String's encoding \
	 * index in its flags and the indexes of the three encodings every Ruby has, Float and dynamic Symbol */ \
	X(fixnum_flag) X(flonum_mask) X(flonum_flag) X(symbol_flag) X(special_shift) \
	X(enc_shift) X(enc_mask) X(encindex_binary) X(encindex_utf_8) X(encindex_us_ascii) \
	X(rfloat_value) X(rsymbol_fstr) X(vm_top_self) \
	/* RHash: an ar_table (up to 8 pairs, its size and bound in the flags) or an st_table, through a pointer \
	 * (to 3.2) or in the slot after the RHash (3.3+) */ \
	X(rhash_st_flag) X(rhash_ar_size_mask) X(rhash_ar_size_shift) X(rhash_ar_bound_mask) X(rhash_ar_bound_shift) \
	X(rhash_table_ptr) X(rhash_table_inline) X(ar_pairs) X(st_num_entries) X(st_entry_hash) \
	/* a frame's local variables: its iseq's local table (IDs, parameters first) and the env words below ep */ \
	X(body_local_table) X(body_local_table_size) X(body_param_size) \
	/* fiber-local variables (Thread#[]): the ec's table, an st_table (2.7) or an rb_id_table (3.0+: keys are \
	 * ID serials, 0 for none) */ \
	X(ec_local_storage) X(ec_local_storage_idtbl) X(idtbl_capa) X(idtbl_num) X(idtbl_items) \
	X(id_item_size) X(id_item_key) X(id_item_val) \
	/* an object's instance variables: embedded in its slot or behind a pointer; named by its class's \
	 * iv_index_tbl (to 3.1: an st_table of ID -> index, 3.0 and 3.1: -> an entry holding it, its \
	 * index at iv_index_entry_index) or by its shape (3.2+, the shape fields above; 3.3+ find the shape \
	 * list through rb_shape_tree_ptr: a tree whose list and root are the same first shape) */ \
	X(robject_embed_flag) X(robject_embed_len) X(robject_embed_ary) X(robject_heap_numiv) X(robject_heap_ivptr) \
	X(classext_iv_index_tbl) X(iv_index_entry_index) X(rclass_super) \
	X(shape_tree_list) X(shape_tree_root) X(shape_tree_next_id) X(shape_type_too_complex) \
	/* RStruct: its members in the slot (their count in the flags) or behind a pointer */ \
	X(rstruct_embed_len_mask) X(rstruct_embed_len_shift) X(rstruct_heap_len) X(rstruct_heap_ptr) X(rstruct_embed_ary) \
	/* RBignum: its sign (the bit set: not negative), its digits in the slot (their count in the flags) or \
	 * behind a pointer, bdigit_size bytes each, the least significant first (Debian's Rubies' headers) */ \
	X(rbignum_sign_bit) X(rbignum_embed_flag) X(rbignum_embed_len_mask) X(rbignum_embed_len_shift) \
	X(rbignum_heap_len) X(rbignum_heap_digits) X(rbignum_embed_ary) X(bdigit_size) \
	/* the instance variables of an object other than a plain one (a Thread's thread variables): their \
	 * count and slots in its struct gen_ivtbl, found in the VM's generic table by the object; the slots \
	 * in the entry (gen_ivtbl_ivptr_ptr 0) or behind a pointer there (1) (Debian's Rubies' headers) */ \
	X(gen_ivtbl_numiv) X(gen_ivtbl_ivptr) X(gen_ivtbl_ivptr_ptr)
