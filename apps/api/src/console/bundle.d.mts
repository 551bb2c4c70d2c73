export declare const CONSOLE_SCRIPT: string;
export declare function bundleConsole(options?: { outfile?: string }): Promise<string>;
export declare function buildConsole(options?: { outfile?: string }): Promise<{ text: string; inputs: string[] }>;
