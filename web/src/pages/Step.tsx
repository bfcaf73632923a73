export function StepPage() {
  return <p>Step</p>;
}
