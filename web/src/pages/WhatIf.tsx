export function WhatIfPage() {
  return <p>What-if</p>;
}
