// placeholder: writers arrive with the gate.
namespace attncheck::reports {}
