export function ValidatePage() {
  return <p>Validate</p>;
}
