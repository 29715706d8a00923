/* layout-probe.c: compiled against one Ruby's own source headers, prints that Ruby's struct ruby_layout. */
/*
 * Built and run by tools/gen-layouts, never by the rbscope build. Version
 * differences live here, as #if on the Ruby headers' own version macros, so
 * that the walker in src/ruby/ reads only data. Every field of
 * RUBY_LAYOUT_FIELDS must have an F_<name> below or this file does not compile.
 */
#include "ruby/ruby.h"
#include "ruby/version.h"
#include "version.h" /* the release of the internal headers (gen-layouts may write it) */

/*
 * V: the release of the internal headers (vm_core.h & co); PV: that of the
 * public headers (include/ruby). They differ when gen-layouts puts one
 * release's internal headers over a nearby release's public ones.
 */
#define V(maj, min) (RUBY_VERSION_MAJOR * 100 + RUBY_VERSION_MINOR >= (maj) * 100 + (min))
#define PV(maj, min) (RUBY_API_VERSION_MAJOR * 100 + RUBY_API_VERSION_MINOR >= (maj) * 100 + (min))
#include "ruby/encoding.h" /* 2.7's internal.h wants it first */
#include "vm_core.h"
#include "iseq.h"
#include "method.h"
#include "symbol.h"
#if V(2, 8)
#include "internal/class.h"
#else
#include "internal.h"
#endif
#if RUBY_VERSION_MAJOR >= 3
#include "ractor_core.h"
#endif
#if V(2, 8)
#include "internal/hash.h"
#include "internal/numeric.h"
#include "internal/struct.h"
#endif
#include "encindex.h"
#include "probe_private.h" /* st.c, symbol.c, id_table.c and hash.c private definitions, extracted by gen-layouts */
/* Bignums and generic instance variables from a whole Debian source tree only (RBSCOPE_CORE: a release's vendored
   internal headers, which lack them: the donor's would stand in for the release's own) */
#if !defined(RBSCOPE_CORE) && __has_include("internal/bignum.h")
#include "internal/bignum.h"
#endif
#if !defined(RBSCOPE_CORE) && !V(4, 0) && __has_include("variable.h")
#include "variable.h"
#define RBSCOPE_GEN_IVTBL 1
#endif
#include <stdio.h>
#include <string.h>
#include "layout_fields.h"
#define OFF(type, member) ((long long)offsetof(type, member))
#define NONE (-1LL)

/* Bit-fields have no offsetof: set every bit of one in a zeroed struct and look. */
#define BITPOS(type, member, what) bitpos(({ static type t_; memset(&t_, 0, sizeof t_); \
	t_.member = -1; (const unsigned char *)&t_; }), sizeof(type), what)
static long long bitpos(const unsigned char *p, size_t n, int what)
{
	for (size_t i = 0; i < n; i++) {
		if (!p[i])
			continue;
		int shift = __builtin_ctz(p[i]), bits = __builtin_popcount(p[i]);
		return what == 0 ? (long long)i : what == 1 ? shift : bits;
	}
	return -1;
}

#define F_api_major RUBY_VERSION_MAJOR
#define F_api_minor RUBY_VERSION_MINOR
#define F_api_teeny RUBY_VERSION_TEENY
#define F_qfalse RUBY_Qfalse
#define F_qtrue RUBY_Qtrue
#define F_qnil RUBY_Qnil
#define F_qundef RUBY_Qundef
#define F_t_mask RUBY_T_MASK
#define F_t_object RUBY_T_OBJECT
#define F_t_class RUBY_T_CLASS
#define F_t_module RUBY_T_MODULE
#define F_t_string RUBY_T_STRING
#define F_t_array RUBY_T_ARRAY
#define F_t_iclass RUBY_T_ICLASS
#define F_t_imemo RUBY_T_IMEMO
#define F_t_none RUBY_T_NONE
#define F_t_float RUBY_T_FLOAT
#define F_t_regexp RUBY_T_REGEXP
#define F_t_hash RUBY_T_HASH
#define F_t_struct RUBY_T_STRUCT
#define F_t_bignum RUBY_T_BIGNUM
#define F_t_file RUBY_T_FILE
#define F_t_data RUBY_T_DATA
#define F_t_match RUBY_T_MATCH
#define F_t_complex RUBY_T_COMPLEX
#define F_t_rational RUBY_T_RATIONAL
#define F_t_symbol RUBY_T_SYMBOL
#define F_t_node RUBY_T_NODE
#define F_t_zombie RUBY_T_ZOMBIE
#define F_t_moved RUBY_T_MOVED
#define F_fl_ushift RUBY_FL_USHIFT
#define F_fl_singleton FL_SINGLETON
#define F_imemo_mask IMEMO_MASK
#define F_imemo_ment imemo_ment
#define F_imemo_iseq imemo_iseq
#define F_imemo_svar imemo_svar /* a method that used $~ or $_ keeps its method entry inside one */
#define F_svar_cref_or_me OFF(struct vm_svar, cref_or_me)
#define F_rbasic_flags OFF(struct RBasic, flags)
#define F_rbasic_klass OFF(struct RBasic, klass)

#define F_rstring_noembed RSTRING_NOEMBED
#if PV(3, 2)
#define F_rstring_embed_len_mask 0
#define F_rstring_embed_len_shift 0
#define F_rstring_len OFF(struct RString, len)
#define F_rstring_heap_len OFF(struct RString, len)
#define F_rstring_embed_ary OFF(struct RString, as.embed.ary)
#else
#define F_rstring_embed_len_mask RSTRING_EMBED_LEN_MASK
#define F_rstring_embed_len_shift RSTRING_EMBED_LEN_SHIFT
#define F_rstring_len NONE
#define F_rstring_heap_len OFF(struct RString, as.heap.len)
#if PV(3, 1)
#define F_rstring_embed_ary OFF(struct RString, as.embed.ary)
#else
#define F_rstring_embed_ary OFF(struct RString, as.ary)
#endif
#endif
#define F_rstring_heap_ptr OFF(struct RString, as.heap.ptr)

#define F_rarray_embed_flag RARRAY_EMBED_FLAG
#define F_rarray_embed_len_mask RARRAY_EMBED_LEN_MASK
#define F_rarray_embed_len_shift RARRAY_EMBED_LEN_SHIFT
#define F_rarray_heap_len OFF(struct RArray, as.heap.len)
#define F_rarray_heap_ptr OFF(struct RArray, as.heap.ptr)
#define F_rarray_embed_ary OFF(struct RArray, as.ary)

#if V(3, 0)
#define F_vm_main_thread OFF(rb_vm_t, ractor.main_thread)
#define F_vm_main_ractor OFF(rb_vm_t, ractor.main_ractor)
#define F_vm_living_threads NONE
#define F_vm_gvl_owner NONE
#define F_ractor_threads_set OFF(rb_ractor_t, threads.set)
#if V(3, 2)
#define F_ractor_gvl_owner OFF(rb_ractor_t, threads.sched.running)
#else
#define F_ractor_gvl_owner OFF(rb_ractor_t, threads.gvl.owner)
#endif
#define F_th_lt_node OFF(rb_thread_t, lt_node)
#define F_th_ractor OFF(rb_thread_t, ractor)
#define F_vm_ractor_set OFF(rb_vm_t, ractor.set)
#define F_vm_ractor_cnt OFF(rb_vm_t, ractor.cnt)
#define F_ractor_vmlr_node OFF(rb_ractor_t, vmlr_node)
#define F_ractor_id OFF(rb_ractor_t, pub.id)
#define F_ractor_name OFF(rb_ractor_t, name)
#else
#define F_vm_main_thread OFF(rb_vm_t, main_thread)
#define F_vm_main_ractor NONE
#define F_vm_living_threads OFF(rb_vm_t, living_threads)
#define F_vm_gvl_owner OFF(rb_vm_t, gvl.owner)
#define F_ractor_threads_set NONE
#define F_ractor_gvl_owner NONE
#define F_th_lt_node OFF(rb_thread_t, vmlt_node)
#define F_th_ractor NONE
#define F_vm_ractor_set NONE
#define F_vm_ractor_cnt NONE
#define F_ractor_vmlr_node NONE
#define F_ractor_id NONE
#define F_ractor_name NONE
#endif
#define F_th_self OFF(rb_thread_t, self)
#define F_th_vm OFF(rb_thread_t, vm)
#define F_th_ec OFF(rb_thread_t, ec)
#define F_th_name OFF(rb_thread_t, name)
#define F_th_status_byte BITPOS(rb_thread_t, status, 0)
#define F_th_status_shift BITPOS(rb_thread_t, status, 1)
#define F_th_status_bits BITPOS(rb_thread_t, status, 2)
#if V(3, 2)
#define F_th_tid NONE
#define F_th_nt OFF(rb_thread_t, nt)
#define F_nt_tid OFF(struct rb_native_thread, tid)
#define F_th_thread_id NONE
#elif V(3, 1)
#define F_th_tid OFF(rb_thread_t, tid)
#define F_th_nt NONE
#define F_nt_tid NONE
#define F_th_thread_id OFF(rb_thread_t, thread_id)
#else
#define F_th_tid NONE
#define F_th_nt NONE
#define F_nt_tid NONE
#define F_th_thread_id OFF(rb_thread_t, thread_id)
#endif
#define F_th_unblock_func OFF(rb_thread_t, unblock.func)
#if V(3, 3)
#define F_th_dedicated_byte BITPOS(rb_thread_t, has_dedicated_nt, 0)
#define F_th_dedicated_shift BITPOS(rb_thread_t, has_dedicated_nt, 1)
#define F_th_dedicated_bits BITPOS(rb_thread_t, has_dedicated_nt, 2)
#else
#define F_th_dedicated_byte NONE
#define F_th_dedicated_shift NONE
#define F_th_dedicated_bits NONE
#endif
#define F_thread_runnable THREAD_RUNNABLE
#define F_thread_stopped THREAD_STOPPED
#define F_thread_stopped_forever THREAD_STOPPED_FOREVER
#define F_thread_killed THREAD_KILLED

#define F_ec_vm_stack OFF(rb_execution_context_t, vm_stack)
#define F_ec_vm_stack_size OFF(rb_execution_context_t, vm_stack_size)
#define F_ec_cfp OFF(rb_execution_context_t, cfp)
#define F_ec_thread_ptr OFF(rb_execution_context_t, thread_ptr)
#define F_cfp_size ((long long)sizeof(rb_control_frame_t))
#define F_cfp_pc OFF(rb_control_frame_t, pc)
#define F_cfp_sp OFF(rb_control_frame_t, sp)
#define F_cfp_iseq OFF(rb_control_frame_t, iseq)
#define F_cfp_self OFF(rb_control_frame_t, self)
#define F_cfp_ep OFF(rb_control_frame_t, ep)
/* where JIT code returns to (3.1+): set once a frame has run JIT code, whose pc the JIT saves only when it must */
#if V(3, 1)
#define F_cfp_jit_return OFF(rb_control_frame_t, jit_return)
#else
#define F_cfp_jit_return NONE
#endif
#define F_frame_magic_mask VM_FRAME_MAGIC_MASK
#define F_frame_magic_method VM_FRAME_MAGIC_METHOD
#define F_frame_magic_block VM_FRAME_MAGIC_BLOCK
#define F_frame_magic_class VM_FRAME_MAGIC_CLASS
#define F_frame_magic_top VM_FRAME_MAGIC_TOP
#define F_frame_magic_cfunc VM_FRAME_MAGIC_CFUNC
#define F_frame_magic_ifunc VM_FRAME_MAGIC_IFUNC
#define F_frame_magic_eval VM_FRAME_MAGIC_EVAL
#define F_frame_magic_rescue VM_FRAME_MAGIC_RESCUE
#define F_frame_magic_dummy VM_FRAME_MAGIC_DUMMY
#define F_frame_flag_cframe VM_FRAME_FLAG_CFRAME
#define F_frame_flag_bmethod VM_FRAME_FLAG_BMETHOD
#define F_env_flag_local VM_ENV_FLAG_LOCAL
#define F_env_index_me_cref VM_ENV_DATA_INDEX_ME_CREF
#define F_env_index_specval VM_ENV_DATA_INDEX_SPECVAL
#define F_env_index_flags VM_ENV_DATA_INDEX_FLAGS

#define BODY struct rb_iseq_constant_body
#define F_iseq_body OFF(rb_iseq_t, body)
#define F_body_type OFF(BODY, type)
#define F_body_type_size ((long long)sizeof(((BODY *)0)->type))
#define F_body_pathobj OFF(BODY, location.pathobj)
#define F_body_label OFF(BODY, location.label)
#define F_body_base_label OFF(BODY, location.base_label)
#define F_body_first_lineno OFF(BODY, location.first_lineno)
#define F_body_first_lineno_size ((long long)sizeof(((BODY *)0)->location.first_lineno))
#define F_body_iseq_encoded OFF(BODY, iseq_encoded)
#define F_body_iseq_size OFF(BODY, iseq_size)
#define F_body_insns_info_body OFF(BODY, insns_info.body)
#define F_body_insns_info_positions OFF(BODY, insns_info.positions)
#define F_body_insns_info_size OFF(BODY, insns_info.size)
#define F_body_succ_index_table OFF(BODY, insns_info.succ_index_table)
#define F_body_parent_iseq OFF(BODY, parent_iseq)
/* methods in Ruby that backtraces show as C methods, at their caller's line (Primitive.attr! :c_trace, 3.4+; the
   attributes' word is 3.3's too, without that bit) */
#if V(3, 3)
#define F_body_builtin_attrs OFF(BODY, builtin_attrs)
#else
#define F_body_builtin_attrs NONE
#endif
#if V(3, 4)
#define F_builtin_attr_c_trace BUILTIN_ATTR_C_TRACE
#else
#define F_builtin_attr_c_trace NONE
#endif
/*
 * 3.1's YJIT (in C): an iseq's blocks of JIT code (yjit_core.h, in a whole source tree only). yjit_blocks is a
 * darray with a darray of block versions for each instruction where one starts; a block holds its iseq, its
 * first instruction and the one after its last (iseq_encoded indexes), and its code's start and end.
 */
#if V(3, 1) && !V(3, 2) && __has_include("yjit_core.h")
#include "yjit_core.h"
#define F_body_yjit_blocks OFF(BODY, yjit_blocks)
#define F_darray_size OFF(rb_darray_meta_t, size) /* (an int32_t in 3.1's) */
#define F_darray_data ((long long)sizeof(rb_darray_meta_t)) /* (pointers after two int32_t: no padding) */
#define F_yjit_block_iseq OFF(block_t, blockid.iseq)
#define F_yjit_block_idx OFF(block_t, blockid.idx)
#define F_yjit_block_end_idx OFF(block_t, end_idx)
#define F_yjit_block_start OFF(block_t, start_addr)
#define F_yjit_block_end OFF(block_t, end_addr)
#else
#define F_body_yjit_blocks NONE
#if V(3, 4) && __has_include("darray.h") /* (3.4's darray, for its sorted heap pages: size_t there) */
#include "darray.h"
#define F_darray_size OFF(rb_darray_meta_t, size)
#else
#define F_darray_size NONE
#endif
#define F_darray_data NONE
#define F_yjit_block_iseq NONE
#define F_yjit_block_idx NONE
#define F_yjit_block_end_idx NONE
#define F_yjit_block_start NONE
#define F_yjit_block_end NONE
#endif
#define F_insn_info_size ((long long)sizeof(struct iseq_insn_info_entry))
#define F_insn_info_line_no OFF(struct iseq_insn_info_entry, line_no)
#define F_iseq_type_top ISEQ_TYPE_TOP
#define F_iseq_type_method ISEQ_TYPE_METHOD
#define F_iseq_type_block ISEQ_TYPE_BLOCK
#define F_iseq_type_class ISEQ_TYPE_CLASS
#define F_iseq_type_rescue ISEQ_TYPE_RESCUE
#define F_iseq_type_ensure ISEQ_TYPE_ENSURE
#define F_iseq_type_eval ISEQ_TYPE_EVAL
#define F_iseq_type_main ISEQ_TYPE_MAIN
/* vm_backtrace.c since 3.4: a rescue/ensure frame is labelled as its parent iseq, and the frame after it skipped */
#if V(3, 4)
#define F_rescue_as_parent 1
#else
#define F_rescue_as_parent 0
#endif

#define F_me_flags OFF(rb_method_entry_t, flags)
#define F_me_defined_class OFF(rb_method_entry_t, defined_class)
#define F_me_def OFF(rb_method_entry_t, def)
#define F_me_called_id OFF(rb_method_entry_t, called_id)
#define F_me_owner OFF(rb_method_entry_t, owner)
#define F_def_type_byte BITPOS(rb_method_definition_t, type, 0)
#define F_def_type_shift BITPOS(rb_method_definition_t, type, 1)
#define F_def_type_bits BITPOS(rb_method_definition_t, type, 2)
#define F_def_original_id OFF(rb_method_definition_t, original_id)
#define F_method_type_iseq VM_METHOD_TYPE_ISEQ
#define F_method_type_cfunc VM_METHOD_TYPE_CFUNC
#define F_method_type_bmethod VM_METHOD_TYPE_BMETHOD

#define F_rclass_size ((long long)sizeof(struct RClass))
/* The classext: inside the RClass's slot from 3.2 (when variable width allocation embeds it), before a pointer. */
#if V(3, 3) || (V(3, 2) && RCLASS_EXT_EMBEDDED)
#define F_classext_ptr NONE
#define F_classext_inline ((long long)sizeof(struct RClass))
#else
#define F_classext_ptr OFF(struct RClass, ptr)
#define F_classext_inline NONE
#endif
/* The class path: a field from 3.3; before, the hidden ivar __classpath__ (an st_table until 3.1, shapes in 3.2). */
#if V(3, 3)
#define F_classext_iv_tbl NONE
#define F_classext_classpath OFF(rb_classext_t, classpath)
#define F_classext_attached_object OFF(rb_classext_t, as.singleton_class.attached_object)
#elif V(3, 2)
#define F_classext_iv_tbl NONE
#define F_classext_classpath NONE
#define F_classext_attached_object NONE
#else
#define F_classext_iv_tbl OFF(rb_classext_t, iv_tbl)
#define F_classext_classpath NONE
#define F_classext_attached_object NONE
#endif
#if V(4, 0)
#define F_classext_iv_ptr NONE /* a fields object instead */
#elif V(3, 2)
#define F_classext_iv_ptr OFF(rb_classext_t, iv_ptr)
#else
#define F_classext_iv_ptr NONE
#endif

/*
 * Object shapes (3.2-3.4): which ivar is in which slot. 3.2 keeps a class's
 * path in an ivar (__classpath__) whose slot only its shape tells, and its
 * shape list in rb_vm_t; 3.3 and 3.4 in rb_shape_tree_ptr's tree.
 */
#if V(3, 2) && !V(4, 0)
#if V(3, 3)
#define F_vm_shape_list NONE
#define F_shape_tree_list OFF(rb_shape_tree_t, shape_list)
#define F_shape_tree_root OFF(rb_shape_tree_t, root_shape)
#define F_shape_tree_next_id OFF(rb_shape_tree_t, next_shape_id)
#else
#define F_vm_shape_list OFF(rb_vm_t, shape_list)
#define F_shape_tree_list NONE
#define F_shape_tree_root NONE
#define F_shape_tree_next_id NONE
#endif
#define F_shape_type_too_complex SHAPE_OBJ_TOO_COMPLEX
#define F_shape_size ((long long)sizeof(rb_shape_t))
#define F_shape_edge_name OFF(rb_shape_t, edge_name)
#define F_shape_next_iv_index OFF(rb_shape_t, next_iv_index)
#define F_shape_parent_id OFF(rb_shape_t, parent_id)
#define F_shape_type OFF(rb_shape_t, type)
#define F_shape_type_ivar SHAPE_IVAR
#define F_shape_flag_shift SHAPE_FLAG_SHIFT
#define F_shape_id_bits SHAPE_ID_NUM_BITS
#else
#define F_vm_shape_list NONE
#define F_shape_tree_list NONE
#define F_shape_tree_root NONE
#define F_shape_tree_next_id NONE
#define F_shape_type_too_complex NONE
#define F_shape_size NONE
#define F_shape_edge_name NONE
#define F_shape_next_iv_index NONE
#define F_shape_parent_id NONE
#define F_shape_type NONE
#define F_shape_type_ivar NONE
#define F_shape_flag_shift NONE
#define F_shape_id_bits NONE
#endif

/*
 * The GC's state: rb_vm_t points to rb_objspace, a struct private to gc.c
 * (3.4: gc/default/default.c). gen-layouts measures its bit-fields on that
 * file compiled with -g (the DWARF of gc.o) and puts them in place of these
 * NONEs; the enum gc_mode comes from the same file (probe_private.h).
 */
#if V(3, 4)
#define F_vm_objspace OFF(rb_vm_t, gc.objspace)
#else
#define F_vm_objspace OFF(rb_vm_t, objspace)
#endif
#define F_gc_mode_byte NONE
#define F_gc_mode_shift NONE
#define F_gc_mode_bits NONE
#define F_gc_during_byte NONE
#define F_gc_during_shift NONE
#define F_gc_compacting_byte NONE
#define F_gc_compacting_shift NONE
#define F_gc_count NONE
#define F_gc_major_count NONE
#define F_gc_time_ns NONE
#define F_gc_mark_ns NONE
#define F_gc_sweep_ns NONE
#define F_gc_allocated NONE
#define F_gc_freed NONE
#define F_gc_final NONE
#define F_gc_pools NONE
#define F_gc_pool_count NONE
#define F_gc_pool_size NONE
#define F_gc_pool_eden_slots NONE
#define F_gc_pool_tomb_slots NONE
#define F_gc_pool_allocated NONE
#define F_gc_pool_freed NONE
#define F_gc_pool_final NONE
#define F_gc_pages_sorted NONE
#define F_gc_pages_allocated NONE
/* 3.4's sorted pages are a darray (darray.h, in a whole source tree only): its elements after its header */
#if V(3, 4) && __has_include("darray.h")
#include "darray.h"
#define F_gc_pages_darray ((long long)sizeof(rb_darray_meta_t)) /* (pointers after two size_t: no padding) */
#else
#define F_gc_pages_darray NONE
#endif
#define F_gc_page_start NONE
#define F_gc_page_total_slots NONE
#define F_gc_page_slot_size NONE
#ifdef RBSCOPE_GC_MODE
#define F_gc_mode_marking gc_mode_marking
#define F_gc_mode_sweeping gc_mode_sweeping
#define F_gc_mode_compacting RBSCOPE_GC_MODE_COMPACTING
#else
#define F_gc_mode_marking NONE
#define F_gc_mode_sweeping NONE
#define F_gc_mode_compacting NONE
#endif

#define F_st_entries OFF(st_table, entries)
#define F_st_entries_start OFF(st_table, entries_start)
#define F_st_entries_bound OFF(st_table, entries_bound)
#define F_st_entry_size ((long long)sizeof(st_table_entry))
#define F_st_entry_key OFF(st_table_entry, key)
#define F_st_entry_record OFF(st_table_entry, record)

#define F_symbols_size ((long long)sizeof(rb_symbols_t))
#define F_symbols_last_id OFF(rb_symbols_t, last_id)
#define F_symbols_str_sym OFF(rb_symbols_t, str_sym)
#define F_symbols_ids OFF(rb_symbols_t, ids)
#define F_id_entry_unit ID_ENTRY_UNIT
#define F_id_entry_size ID_ENTRY_SIZE
#define F_id_scope_shift RUBY_ID_SCOPE_SHIFT
#define F_last_op_id tLAST_OP_ID
#define F_id_serial_each tEach

/* Immediates: how a Fixnum, a Flonum and a static Symbol are told and decoded (ruby/internal/special_consts.h). */
#define F_fixnum_flag RUBY_FIXNUM_FLAG
#define F_flonum_mask RUBY_FLONUM_MASK
#define F_flonum_flag RUBY_FLONUM_FLAG
#define F_symbol_flag RUBY_SYMBOL_FLAG
#define F_special_shift RUBY_SPECIAL_SHIFT
#define F_enc_shift RUBY_ENCODING_SHIFT
#define F_enc_mask ((long long)RUBY_ENCODING_MASK)
#ifdef ENCINDEX_ASCII_8BIT
#define F_encindex_binary ENCINDEX_ASCII_8BIT
#else
#define F_encindex_binary ENCINDEX_ASCII
#endif
#define F_encindex_utf_8 ENCINDEX_UTF_8
#define F_encindex_us_ascii ENCINDEX_US_ASCII
#define F_rfloat_value OFF(struct RFloat, float_value)
#define F_rsymbol_fstr OFF(struct RSymbol, fstr)
#if V(4, 0)
#define F_vm_top_self NONE /* (no longer in rb_vm_t) */
#else
#define F_vm_top_self OFF(rb_vm_t, top_self) /* the object `main` */
#endif

/*
 * RHash. 3.2's internal headers come over the donor's (3.3's) internal/hash.h,
 * which describes 3.3's hash, and 2.6's ar_table holds (hash, key, value)
 * triples: no table for either (their hashes show their class).
 */
#if (V(3, 2) && !V(3, 3)) || !V(2, 7)
#define RBSCOPE_NO_HASH 1
#endif
#ifdef RBSCOPE_NO_HASH
#define F_rhash_st_flag NONE
#define F_rhash_ar_size_mask NONE
#define F_rhash_ar_size_shift NONE
#define F_rhash_ar_bound_mask NONE
#define F_rhash_ar_bound_shift NONE
#define F_rhash_table_ptr NONE
#define F_rhash_table_inline NONE
#define F_ar_pairs NONE
#else
#define F_rhash_st_flag ((long long)RHASH_ST_TABLE_FLAG)
#define F_rhash_ar_size_mask ((long long)RHASH_AR_TABLE_SIZE_MASK)
#define F_rhash_ar_size_shift RHASH_AR_TABLE_SIZE_SHIFT
#define F_rhash_ar_bound_mask ((long long)RHASH_AR_TABLE_BOUND_MASK)
#define F_rhash_ar_bound_shift RHASH_AR_TABLE_BOUND_SHIFT
#if V(3, 3)
#define F_rhash_table_ptr NONE
#define F_rhash_table_inline ((long long)sizeof(struct RHash))
#else
#define F_rhash_table_ptr OFF(struct RHash, as)
#define F_rhash_table_inline NONE
#endif
#define F_ar_pairs OFF(ar_table, pairs) /* (hash.c's own ar_table to 3.2, extracted by gen-layouts) */
#endif
#define F_st_num_entries OFF(st_table, num_entries)
#define F_st_entry_hash OFF(st_table_entry, hash)

#define F_body_local_table OFF(BODY, local_table)
#define F_body_local_table_size OFF(BODY, local_table_size)
#define F_body_param_size OFF(BODY, param.size)

#define F_ec_local_storage OFF(rb_execution_context_t, local_storage)
#define F_ec_local_storage_idtbl \
	(!__builtin_types_compatible_p(__typeof__(((rb_execution_context_t *)0)->local_storage), st_table *))
#define F_idtbl_capa OFF(struct rb_id_table, capa)
#define F_idtbl_num OFF(struct rb_id_table, num)
#define F_idtbl_items OFF(struct rb_id_table, items)
#define F_id_item_size ((long long)sizeof(item_t))
#define F_id_item_key OFF(item_t, key)
#define F_id_item_val OFF(item_t, val)

/* Instance variables and Struct members (snapshot --locals); 4.0's objects keep theirs in a fields object: none. */
#if V(4, 0)
#define F_robject_embed_flag NONE
#define F_robject_embed_len NONE
#define F_robject_embed_ary NONE
#define F_robject_heap_numiv NONE
#define F_robject_heap_ivptr NONE
#define F_rclass_super NONE
#else
#define F_robject_embed_flag ((long long)ROBJECT_EMBED)
#define F_robject_embed_ary OFF(struct RObject, as.ary)
#define F_robject_heap_ivptr OFF(struct RObject, as.heap.ivptr)
#define F_rclass_super OFF(struct RClass, super)
#if V(3, 2)
#define F_robject_embed_len NONE /* (the shape says which slots hold ivars) */
#define F_robject_heap_numiv NONE
#else
#define F_robject_embed_len ROBJECT_EMBED_LEN_MAX
#define F_robject_heap_numiv OFF(struct RObject, as.heap.numiv)
#endif
#endif
#if V(3, 2)
#define F_classext_iv_index_tbl NONE
#else
#define F_classext_iv_index_tbl OFF(rb_classext_t, iv_index_tbl)
#endif
#if V(3, 0) && !V(3, 2)
#define F_iv_index_entry_index OFF(struct rb_iv_index_tbl_entry, index)
#else
#define F_iv_index_entry_index NONE /* (2.6, 2.7: the table's value is the index itself) */
#endif
#define F_rstruct_embed_len_mask ((long long)RSTRUCT_EMBED_LEN_MASK)
#define F_rstruct_embed_len_shift RSTRUCT_EMBED_LEN_SHIFT
#define F_rstruct_heap_len OFF(struct RStruct, as.heap.len)
#define F_rstruct_heap_ptr OFF(struct RStruct, as.heap.ptr)
#define F_rstruct_embed_ary OFF(struct RStruct, as.ary)

#if !defined(RBSCOPE_CORE) && defined(BIGNUM_EMBED_FLAG)
#define F_rbignum_sign_bit ((long long)BIGNUM_SIGN_BIT)
#define F_rbignum_embed_flag ((long long)BIGNUM_EMBED_FLAG)
#define F_rbignum_embed_len_mask ((long long)BIGNUM_EMBED_LEN_MASK)
#define F_rbignum_embed_len_shift ((long long)BIGNUM_EMBED_LEN_SHIFT)
#define F_rbignum_heap_len OFF(struct RBignum, as.heap.len)
#define F_rbignum_heap_digits OFF(struct RBignum, as.heap.digits)
#define F_rbignum_embed_ary OFF(struct RBignum, as.ary)
#define F_bdigit_size ((long long)SIZEOF_BDIGIT)
#else
#define F_rbignum_sign_bit NONE
#define F_rbignum_embed_flag NONE
#define F_rbignum_embed_len_mask NONE
#define F_rbignum_embed_len_shift NONE
#define F_rbignum_heap_len NONE
#define F_rbignum_heap_digits NONE
#define F_rbignum_embed_ary NONE
#define F_bdigit_size NONE
#endif
/* (3.3+: the entry is a union, its shape's slots or a table of their own when "too complex") */
#if defined(RBSCOPE_GEN_IVTBL) && V(3, 3)
#define F_gen_ivtbl_numiv OFF(struct gen_ivtbl, as.shape.numiv)
#define F_gen_ivtbl_ivptr OFF(struct gen_ivtbl, as.shape.ivptr)
#define F_gen_ivtbl_ivptr_ptr \
	((long long)__builtin_types_compatible_p(__typeof__(((struct gen_ivtbl *)0)->as.shape.ivptr), VALUE *))
#elif defined(RBSCOPE_GEN_IVTBL)
#define F_gen_ivtbl_numiv OFF(struct gen_ivtbl, numiv)
#define F_gen_ivtbl_ivptr OFF(struct gen_ivtbl, ivptr)
#define F_gen_ivtbl_ivptr_ptr 0LL
#else
#define F_gen_ivtbl_numiv NONE
#define F_gen_ivtbl_ivptr NONE
#define F_gen_ivtbl_ivptr_ptr NONE
#endif

#define EMIT(name) printf("\t.%s = %lld,\n", #name, (long long)(F_##name));
/* "paths" mode: each field and the expression it was measured with, for the DWARF reader's table. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define EMIT_PATH(name) printf("%s\t%s\n", #name, STR(F_##name));

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "paths")) {
		RUBY_LAYOUT_FIELDS(EMIT_PATH)
		return 0;
	}
	printf("/* ruby_%s.c: Ruby %d.%d.%d struct layout, generated by tools/gen-layouts from %s. Do not edit. */\n",
	       argc > 1 ? argv[1] : "?", RUBY_VERSION_MAJOR, RUBY_VERSION_MINOR, RUBY_VERSION_TEENY,
	       argc > 2 ? argv[2] : "its headers");
	printf("#include \"../layout.h\"\n\nconst struct ruby_layout ruby_layout_%s = {\n", argc > 1 ? argv[1] : "x");
	printf("\t.version = \"%d.%d.%d\",\n", RUBY_VERSION_MAJOR, RUBY_VERSION_MINOR, RUBY_VERSION_TEENY);
	RUBY_LAYOUT_FIELDS(EMIT)
	printf("};\n");
	return 0;
}
