// What every oneDNN-backed op family of the CPU backend shares: the engine, the stream, and two
// growing buffers: the primitives' scratchpad (user scratchpad mode, so oneDNN allocates nothing
// per execution) and the transient buffers of layout reorders, which live only during one call.
#pragma once

#include <cstddef>
#include <dnnl.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>

namespace phalanx::backend::cpu {

// One 64-byte aligned buffer that only grows. Ops run one at a time on the backend's single
// in-order stream, so one buffer serves every primitive in turn.
class GrowingBuffer {
 public:
  GrowingBuffer() = default;
  ~GrowingBuffer();
  GrowingBuffer(const GrowingBuffer&) = delete;
  GrowingBuffer& operator=(const GrowingBuffer&) = delete;

  // Makes the buffer at least `bytes` long. Called only when primitives are created, so the hot
  // path never reallocates; users therefore read data() at every call.
  void reserve(std::size_t bytes);
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Moves data between a caller's fixed layout (NHWC activations, oihw or [out, in] weights) and
// the layout a primitive chose with format_tag::any. When the two agree there is no reorder
// and `internal` is the caller's memory itself, so the common case costs nothing. Otherwise
// `internal` has no buffer of its own: DnnlContext::bind_transient lends it one per call.
struct LayoutBridge {
  dnnl::memory internal;
  std::optional<dnnl::reorder> reorder;
  std::unordered_map<int, dnnl::memory> arguments;

  // Caller memory -> primitive layout (inputs).
  static LayoutBridge into(const dnnl::memory& caller, const dnnl::memory::desc& wanted);
  // Primitive layout -> caller memory (outputs).
  static LayoutBridge out_of(const dnnl::memory& caller, const dnnl::memory::desc& produced);
  void run(const dnnl::stream& stream) const {
    if (reorder) reorder->execute(stream, arguments);
  }
};

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  GrowingBuffer scratchpad;
  GrowingBuffer transient;

  // Attributes every primitive of this backend is created with: user scratchpad, and strict fp32
  // arithmetic (fpmath_mode::strict), so that ONEDNN_DEFAULT_FPMATH_MODE in the environment cannot
  // make an fp32 layer compute in bf16 or tf32 behind train.precision's back.
  static dnnl::primitive_attr primitive_attributes();
  // A memory object without a buffer; the op sets its data handle at each call.
  dnnl::memory unbound_memory(const dnnl::memory::desc& descriptor) const;
  // A scratchpad memory object for a primitive, growing the scratchpad to fit it.
  dnnl::memory scratchpad_memory(const dnnl::primitive_desc_base& primitive_descriptor);
  // Points a scratchpad memory at the scratchpad buffer (which may have grown since).
  void bind_scratchpad(const dnnl::memory& scratchpad_memory) const {
    scratchpad_memory.set_data_handle(scratchpad.data());
  }
  // Grows the transient buffer to hold the internal buffers of the bridges one call uses.
  void reserve_transient(std::initializer_list<const LayoutBridge*> bridges);
  // Gives those bridges disjoint slices of the transient buffer for the current call.
  void bind_transient(std::initializer_list<const LayoutBridge*> bridges) const;
};

// A primitive with its scratchpad, its two operands converted in from the caller's layouts and its
// result converted out (LayoutBridge: nothing where the layouts agree). Arguments that need no
// bridge (a bias) go into `arguments` as they are.
struct BridgedPrimitive {
  struct Argument {
    int name;             // DNNL_ARG_*
    dnnl::memory caller;  // in the caller's layout
  };
  // Whether execute converts the first operand or finds it converted already (by another
  // primitive that reads the same operand in the same layout, into the same buffer).
  enum class FirstOperand { Convert, Converted };

  dnnl::primitive primitive;
  LayoutBridge first, second, result;
  dnnl::memory scratchpad;
  std::unordered_map<int, dnnl::memory> arguments;

  BridgedPrimitive() = default;
  BridgedPrimitive(DnnlContext& context, const dnnl::primitive_desc& descriptor,
                   const Argument& first_operand, const Argument& second_operand,
                   const Argument& result_argument);
  // Lends the three bridges transient buffers for the current call.
  void bind_transient(const DnnlContext& context) const {
    context.bind_transient({&first, &second, &result});
  }
  // Operands in, the primitive, the result out, on the context's stream.
  void execute(const DnnlContext& context, FirstOperand first_operand = FirstOperand::Convert) const;
};

// Converts oneDNN's exception into phalanx's error naming the op and geometry that failed.
[[noreturn]] void throw_dnnl_error(const dnnl::error& error, const std::string& what, const char* file,
                                   int line);

// oneDNN takes `void*` handles for inputs too; it never writes through them.
inline void* mutable_pointer(const void* pointer) {
  return const_cast<void*>(pointer);
}

}  // namespace phalanx::backend::cpu
