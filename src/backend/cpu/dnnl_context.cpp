// The shared oneDNN engine, stream, scratchpad and reorder buffers of the CPU backend (see
// dnnl_context.hpp).
#include "dnnl_context.hpp"

#include "phalanx/core/allocator.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

constexpr std::size_t alignment = 64;

std::size_t aligned_size(std::size_t bytes) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

GrowingBuffer::~GrowingBuffer() {
  if (data_) HostAllocator::instance().deallocate(data_, bytes_);
}

void GrowingBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return;
  char* grown = static_cast<char*>(HostAllocator::instance().allocate(bytes));
  if (data_) HostAllocator::instance().deallocate(data_, bytes_);
  data_ = grown;
  bytes_ = bytes;
}

LayoutBridge LayoutBridge::into(const dnnl::memory& caller, const dnnl::memory::desc& wanted) {
  LayoutBridge bridge;
  if (caller.get_desc() == wanted) {
    bridge.internal = caller;
    return bridge;
  }
  bridge.internal = dnnl::memory(wanted, caller.get_engine(), DNNL_MEMORY_NONE);
  bridge.reorder.emplace(caller, bridge.internal);
  bridge.arguments = {{DNNL_ARG_FROM, caller}, {DNNL_ARG_TO, bridge.internal}};
  return bridge;
}

LayoutBridge LayoutBridge::out_of(const dnnl::memory& caller, const dnnl::memory::desc& produced) {
  LayoutBridge bridge;
  if (caller.get_desc() == produced) {
    bridge.internal = caller;
    return bridge;
  }
  bridge.internal = dnnl::memory(produced, caller.get_engine(), DNNL_MEMORY_NONE);
  bridge.reorder.emplace(bridge.internal, caller);
  bridge.arguments = {{DNNL_ARG_FROM, bridge.internal}, {DNNL_ARG_TO, caller}};
  return bridge;
}

dnnl::primitive_attr DnnlContext::primitive_attributes() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attributes.set_fpmath_mode(dnnl::fpmath_mode::strict);
  return attributes;
}

dnnl::memory DnnlContext::unbound_memory(const dnnl::memory::desc& descriptor) const {
  return dnnl::memory(descriptor, engine, DNNL_MEMORY_NONE);
}

dnnl::memory DnnlContext::scratchpad_memory(const dnnl::primitive_desc_base& primitive_descriptor) {
  const dnnl::memory::desc descriptor = primitive_descriptor.scratchpad_desc();
  scratchpad.reserve(descriptor.get_size());
  return unbound_memory(descriptor);
}

void DnnlContext::reserve_transient(std::initializer_list<const LayoutBridge*> bridges) {
  std::size_t bytes = 0;
  for (const LayoutBridge* bridge : bridges)
    if (bridge->reorder) bytes += aligned_size(bridge->internal.get_desc().get_size());
  transient.reserve(bytes);
}

void DnnlContext::bind_transient(std::initializer_list<const LayoutBridge*> bridges) const {
  std::size_t offset = 0;
  for (const LayoutBridge* bridge : bridges)
    if (bridge->reorder) {
      bridge->internal.set_data_handle(transient.data() + offset);
      offset += aligned_size(bridge->internal.get_desc().get_size());
    }
}

BridgedPrimitive::BridgedPrimitive(DnnlContext& context, const dnnl::primitive_desc& descriptor,
                                   const Argument& first_operand, const Argument& second_operand,
                                   const Argument& result_argument)
    : primitive(descriptor),
      first(LayoutBridge::into(first_operand.caller,
                               descriptor.query_md(dnnl::query::exec_arg_md, first_operand.name))),
      second(LayoutBridge::into(second_operand.caller,
                                descriptor.query_md(dnnl::query::exec_arg_md, second_operand.name))),
      result(LayoutBridge::out_of(result_argument.caller,
                                  descriptor.query_md(dnnl::query::exec_arg_md, result_argument.name))),
      scratchpad(context.scratchpad_memory(descriptor)),
      arguments{{first_operand.name, first.internal},
                {second_operand.name, second.internal},
                {result_argument.name, result.internal},
                {DNNL_ARG_SCRATCHPAD, scratchpad}} {
  context.reserve_transient({&first, &second, &result});
}

void BridgedPrimitive::execute(const DnnlContext& context, FirstOperand first_operand) const {
  context.bind_scratchpad(scratchpad);
  if (first_operand == FirstOperand::Convert) first.run(context.stream);
  second.run(context.stream);
  primitive.execute(context.stream, arguments);
  result.run(context.stream);
}

void throw_dnnl_error(const dnnl::error& error, const std::string& what, const char* file, int line) {
  throw_internal_error(detail::concat("oneDNN failed to ", what, ": ", error.what(), " (status ",
                                      static_cast<int>(error.status), ")"),
                       file, line);
}

}  // namespace phalanx::backend::cpu
